"""Handlers of the catalog tools: preview_data, describe_entry, present_rows."""

from __future__ import annotations

import json

from registry.context import ToolContext
from registry.contract import HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.datacommon import catalog, catalog_errors, check_columns, chosen_dataset, quality_warnings, ranked, table_ok
from tools.fragments import DATASET

PRESENT_MAX_ROWS = 200


@uniform_contract(name="preview_data", is_tabular=True)
@catalog_errors
def preview_data(inputs: dict, context: ToolContext) -> Ok:
    """The first (or a random sample of) rows of a dataset, with the whole dataset's measured schema."""
    _, name, frame = chosen_dataset(context, inputs)
    count = inputs.get("rows", 10)
    shown = frame.sample(min(count, len(frame)), random_state=0) if inputs.get("sample") else frame.head(count)
    ok = table_ok(frame, warnings=quality_warnings(frame), data=shown)
    summary = ", ".join(f"{c.name}: {c.distinct_count} distinct" for c in ok.schema if c.distinct_count is not None)
    ok.warnings.append(Warning("info", f"dataset {name!r}, {len(frame):,} rows; {summary}"))
    return ok


@uniform_contract(name="describe_entry", is_tabular=False)
@catalog_errors
def describe_entry(inputs: dict, context: ToolContext) -> Ok:
    """What a dataset, tool or datasource is: schema, size, provenance and how to use it."""
    name = inputs["name"]
    kind = inputs.get("kind", "any")
    for finder in _FINDERS:
        if kind in ("any", finder.__name__.removeprefix("_find_")):
            found = finder(name, context)
            if found is not None:
                return Ok(rows=1, data=found)
    raise HintException("schema", f"nothing named {name!r} ({kind})", ranked(_everything(name, context)))


def _find_dataset(name: str, context: ToolContext) -> dict | None:
    from datacatalog.store import NoConversation

    try:
        books = catalog(context)
    except NoConversation:
        return None
    entry = next((e for e in books.entries() if e.name == name), None)
    if entry is None:
        return None
    return {
        "kind": "dataset",
        "name": entry.name,
        "rows": entry.rows,
        "columns": entry.columns,
        "size_bytes": entry.size_bytes,
        "source": entry.source,
        "source_detail": entry.source_detail,
        "created_at": entry.created_at.isoformat(),
        "how_to_use": f"preview_data {{dataset: {name!r}}}; query with SQL: SELECT … FROM {name}",
    }


def _find_tool(name: str, context: ToolContext) -> dict | None:
    registry = context.registry
    definition = registry.definitions().get(name) if registry is not None else None
    if definition is None or not definition.callable_by(context.tenant_id):
        return None
    return {
        "kind": "tool",
        "name": definition.name,
        "description": definition.description,
        "category": definition.category,
        "input_schema": definition.input_schema,
    }


def _find_datasource(name: str, context: ToolContext) -> dict | None:
    from tools.datasources import describe_source

    return describe_source(name, context.tenant_id)


_FINDERS = (_find_dataset, _find_tool, _find_datasource)


def _everything(name: str, context: ToolContext) -> list[str]:
    from datacatalog.models import DataSource
    from datacatalog.store import NoConversation, closest

    names = list(DataSource.objects.for_tenant(context.tenant_id).values_list("name", flat=True))
    try:
        names += catalog(context).names()
    except NoConversation:
        pass
    return closest(name, names, limit=5)


@uniform_contract(name="present_rows", is_tabular=True)
@catalog_errors
def present_rows(inputs: dict, context: ToolContext) -> Ok:
    """Show rows of a dataset to the user as a table card (the model gets a short preview)."""
    books, name, frame = chosen_dataset(context, inputs)
    columns = inputs.get("columns") or [str(c) for c in frame.columns]
    check_columns(frame, columns, "columns")
    limit = inputs.get("limit", 50)
    shown = frame[columns].head(limit)
    card = {
        "type": "table",
        "title": inputs.get("title") or name,
        "dataset": name,
        "columns": columns,
        "rows": json.loads(shown.to_json(orient="values", date_format="iso")),
        "total_rows": len(frame),
    }
    ok = table_ok(shown, rows=len(shown))
    ok.effects.cards.append(card)
    if len(frame) > limit:
        ok.warnings.append(Warning("truncated", f"showing {limit} of {len(frame):,} rows to the user"))
    return ok


TOOLS = (
    Tool(
        name="preview_data",
        description=(
            "Look at a dataset of this conversation before working with it: the first rows "
            "(or a random sample), its columns with types, null and distinct counts, and "
            "data-quality warnings. Use it first on any uploaded file."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "rows": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "sample": {"type": "boolean", "default": False, "description": "Random rows instead of the first."},
            },
            "additionalProperties": False,
        },
        handler=preview_data,
        category="data",
        status_message="Previewing the data",
        timeout_seconds=30,
    ),
    Tool(
        name="describe_entry",
        description=(
            "Explain what something is before using it: a dataset (schema, size, where it came "
            "from), a tool (description and input schema) or a registered datasource (kind and "
            "tables). Unknown names get the closest real ones."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Dataset, tool or datasource name."},
                "kind": {"type": "string", "enum": ["any", "dataset", "tool", "datasource"], "default": "any"},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=describe_entry,
        category="data",
        status_message="Looking it up",
        timeout_seconds=30,
    ),
    Tool(
        name="present_rows",
        description=(
            "Show rows of a dataset to the user as a table in the chat (up to 200 rows). Use it "
            "when the user should see the rows themselves; you get a short preview back."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "columns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": "Columns to show, in order; default all.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                "title": {"type": "string", "maxLength": 200},
            },
            "additionalProperties": False,
        },
        handler=present_rows,
        category="data",
        status_message="Preparing the table",
        timeout_seconds=30,
    ),
)

"""Handlers of query and query_frames: read-only SQL over the conversation's datasets."""

from __future__ import annotations

from django.conf import settings

from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.datacommon import catalog, catalog_errors, quality_warnings, ranked, table_ok
from tools.sqlengine import referenced_tables, run_select


@uniform_contract(name="query", is_tabular=True)
@catalog_errors
def query(inputs: dict, context: ToolContext) -> Ok:
    """SELECT over any dataset of the conversation (uploads and tool results)."""
    return _query(inputs, context, sources=None)


@uniform_contract(name="query_frames", is_tabular=True)
@catalog_errors
def query_frames(inputs: dict, context: ToolContext) -> Ok:
    """SELECT over the frames tools produced in this conversation (not uploads)."""
    return _query(inputs, context, sources=("tool",))


def _query(inputs: dict, context: ToolContext, *, sources: tuple[str, ...] | None) -> Ok:
    books = catalog(context)
    entries = [e for e in books.entries() if sources is None or e.source in sources]
    available = {e.name for e in entries}
    wanted = referenced_tables(inputs["sql"])
    unknown = sorted(wanted - available)
    if unknown:
        from datacatalog.store import closest

        what = "frame produced by a tool" if sources else "dataset"
        raise HintException(
            "schema",
            f"no {what} named {unknown[0]!r} in this conversation",
            ranked(closest(unknown[0], sorted(available), limit=5)),
        )
    frames = books.load_all(sorted(wanted))
    save_as = inputs.get("save_as")
    limit = settings.DATA["SAVE_MAX_ROWS"] if save_as else settings.DATA["QUERY_MAX_ROWS"]
    result = run_select(frames, inputs["sql"], max_rows=limit, timeout=settings.DATA["DATASOURCE_TIMEOUT_SECONDS"])
    if len(result) > limit:
        raise _too_many(limit, bool(save_as))
    warnings = quality_warnings(result)
    if not save_as:
        return table_ok(result, warnings=warnings)
    books.save(save_as, result, source="tool", source_detail="query")
    warnings.append(Warning("info", f"saved as dataset {save_as!r}"))
    return table_ok(result, warnings=warnings, effects=Effects(datasets={save_as: result}))


def _too_many(limit: int, saving: bool) -> HintException:
    if saving:
        return HintException(
            "fetch",
            f"the result has more than {limit:,} rows, more than a dataset may hold",
            narrow="filter with WHERE or aggregate with GROUP BY",
        )
    return HintException(
        "fetch",
        f"the result has more than {limit:,} rows, too many to read",
        add="save_as: '<name>' to keep the whole result as a dataset, then preview_data it",
        narrow="aggregate (GROUP BY), filter (WHERE) or add LIMIT 100",
    )


_SAVE_AS = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "Keep the whole result as a dataset of this name (for later tools and exports).",
}

_SQL_INPUT = {
    "type": "object",
    "properties": {
        "sql": {"type": "string", "minLength": 1, "description": "One SELECT statement."},
        "save_as": _SAVE_AS,
    },
    "required": ["sql"],
    "additionalProperties": False,
}

TOOLS = (
    Tool(
        name="query",
        description=(
            "Run one read-only SQL SELECT (DuckDB dialect) over this conversation's datasets; "
            "each dataset is a table of the same name. Returns up to 500 rows; for more, "
            "aggregate or filter, or pass save_as to keep the result as a new dataset."
        ),
        input_schema=_SQL_INPUT,
        handler=query,
        category="data",
        status_message="Running the query",
        timeout_seconds=60,
    ),
    Tool(
        name="query_frames",
        description=(
            "Run one read-only SQL SELECT over the frames that tools produced in this "
            "conversation (query results saved with save_as, analyze_data outputs), not the "
            "uploads. Same rules and limits as query."
        ),
        input_schema=_SQL_INPUT,
        handler=query_frames,
        category="data",
        status_message="Querying the frames",
        timeout_seconds=60,
    ),
)

"""create_kit and search_kits: a conversation's datasets, queries and charts, kept for the tenant.

A kit copies the datasets it names (Parquet files under the tenant's ``kits``
directory) and records queries and chart recipes beside them. Any conversation
of the same tenant finds kits by meaning, through the hybrid index the other
searches use (``tools.lib.hybrid``: BM25 + the bundled encoders, the vector
stored on the kit's row), and loading one registers its datasets in that
conversation and draws its charts again from them. Another tenant's kits are
never searched, named or loaded.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django.db import transaction
from django.db.models import Count, Max

from datacatalog.store import ConversationCatalog, closest
from eunice.bounded_read import read_parquet_file
from eunice.tenant_files import catalog_dir
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.retrieval import ToolDocument
from tools.actors import may
from tools.charts import CHART_PROPERTIES, chart_effects, chart_spec
from tools.datacommon import catalog, catalog_errors, ranked
from tools.lib.hybrid import MIN_SIMILARITY, IndexCache, as_document, build_index, embed_missing
from tools.models import Kit

MAX_DATASETS = 20
MAX_QUERIES = 20
MAX_CHARTS = 10
# Who may replace a kit someone else made, beside staff: it deletes that person's work.
REPLACE_PERMISSION = "tools.change_kit"
# A dataset loaded from a kit is marked with this source, so loading the kit again replaces it.
KIT_SOURCE = "kit"

_INDEXES = IndexCache()


def clear_cache() -> None:
    _INDEXES.clear()


def describe(kit: Kit) -> str:
    """The text a kit is found by: what it is for, and what it holds."""
    datasets = "; ".join(f"{d['name']} ({', '.join(c['name'] for c in d['columns'][:20])})" for d in kit.datasets)
    queries = "; ".join(q["title"] for q in kit.queries)
    charts = "; ".join(c.get("title") or f"{c['y']} by {c['x']}" for c in kit.charts)
    parts = [kit.description, f"datasets: {datasets}" if datasets else "", f"queries: {queries}" if queries else ""]
    return " ".join(part for part in [*parts, f"charts: {charts}" if charts else ""] if part)


def _document(kit: Kit) -> ToolDocument:
    return as_document(f"kit:{kit.pk}", kit.name, describe(kit))


# -- create_kit -------------------------------------------------------------------------


@uniform_contract(name="create_kit", is_tabular=False)
@catalog_errors
def create_kit(inputs: dict, context: ToolContext) -> Ok | Err:
    """Copy the named datasets of this conversation into a new kit with its queries and charts.

    Replacing a kit of the same name is for its maker, staff and holders of REPLACE_PERMISSION."""
    books = catalog(context)
    names = inputs.get("datasets") or books.names()
    if not names:
        raise HintException(
            "schema", "datasets: this conversation has no datasets to keep; upload a file or query with save_as first"
        )
    if len(names) > MAX_DATASETS:
        raise HintException("schema", f"datasets: a kit holds at most {MAX_DATASETS}; name the ones worth keeping")
    frames = {name: books.load(name) for name in names}
    charts = inputs.get("charts", [])
    for number, chart in enumerate(charts):
        _check_chart(chart, frames, number)
    existing = Kit.objects.for_tenant(context.tenant_id).filter(name=inputs["name"]).first()
    if existing is not None and not inputs.get("replace"):
        raise HintException(
            "schema",
            f"name: the tenant already has a kit named {inputs['name']!r} (made in conversation "
            f"{existing.conversation_id}); pick another name, or pass replace: true to overwrite it",
        )
    if (
        existing is not None
        and existing.created_by != str(context.user_id or "")
        and not may(context, REPLACE_PERMISSION)
    ):
        return Err(
            f"kit {existing.name!r} was made by someone else: only they, staff or holders of {REPLACE_PERMISSION} "
            "may replace it; save this one under another name",
            "PermissionDenied",
        )
    folder = catalog_dir(context.tenant_id, "kits", uuid.uuid4().hex)
    datasets = []
    for name, frame in frames.items():
        path = folder / f"{name}.parquet"
        shutil.copyfile(books.entry(name).path, path)
        columns = [{"name": str(c), "dtype": str(t)} for c, t in frame.dtypes.items()]
        datasets.append({"name": name, "path": str(path), "rows": len(frame), "columns": columns})
    kit = _save(inputs, context, books, datasets, existing)
    summary = ", ".join(f"{d['name']} ({d['rows']:,} rows)" for d in datasets)
    return Ok(
        rows=1,
        data=f"Kit {kit.name!r} saved for the tenant: datasets {summary}; {len(kit.queries)} query(ies), "
        f"{len(kit.charts)} chart(s). Another conversation finds it with search_kits and loads it with "
        f"search_kits {{load: {kit.name!r}}}.",
    )


def _check_chart(chart: dict, frames: dict, number: int) -> None:
    """Raise a Hint naming ``charts[number]`` unless the chart can be drawn from the kit's datasets."""
    dataset = chart["dataset"]
    if dataset not in frames:
        raise HintException(
            "schema",
            f"charts[{number}].dataset: {dataset!r} is not one of the kit's datasets; "
            "name one of them (or add it to datasets)",
            ranked(closest(str(dataset), list(frames), limit=5)),
        )
    chart_spec(frames[dataset], dataset, chart, field_prefix=f"charts[{number}].")


def _save(inputs: dict, context: ToolContext, books: ConversationCatalog, datasets: list, existing: Kit | None) -> Kit:
    with transaction.atomic():
        if existing is not None:
            existing.delete()
        kit = Kit.objects.create(
            tenant_id=context.tenant_id,
            name=inputs["name"],
            description=inputs["description"],
            conversation_id=books.conversation_id,
            created_by=str(context.user_id or ""),
            datasets=datasets,
            queries=inputs.get("queries", []),
            charts=inputs.get("charts", []),
        )
    _, fresh = embed_missing([_document(kit)], {})
    blob, tag = fresh[f"kit:{kit.pk}"]
    Kit.objects.filter(pk=kit.pk).update(embedding=blob, embedding_model=tag)
    if existing is not None:
        _remove_files(existing)
    return kit


def _remove_files(kit: Kit) -> None:
    folders = {Path(d["path"]).parent for d in kit.datasets}
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


# -- search_kits ------------------------------------------------------------------------


@uniform_contract(name="search_kits", is_tabular=False)
@catalog_errors
def search_kits(inputs: dict, context: ToolContext) -> Ok:
    """The tenant's kits matching a description, best first; or one kit loaded into this conversation."""
    if inputs.get("load"):
        return _load(inputs["load"], context)
    if not inputs.get("query"):
        raise HintException("schema", "query: say what the kit should hold, or pass load: '<kit name>' to load one")
    kits = Kit.objects.for_tenant(context.tenant_id)
    fingerprint = tuple(kits.aggregate(n=Count("id"), last=Max("id"), changed=Max("updated_at")).values())
    index, by_key = _INDEXES.get(context.tenant_id, fingerprint, lambda: _build(context.tenant_id))
    hits = (
        index.search(inputs["query"], inputs.get("limit", 5), min_similarity=MIN_SIMILARITY, scope=context.tenant_id)
        if by_key
        else []
    )
    if not hits:
        raise HintException(
            "fetch",
            f"no kit of this tenant matches {inputs['query']!r} ({len(by_key)} kit(s) in all)",
            narrow="describe what the kit is for in other words; a kit exists only once create_kit made it",
        )
    lines = [f"{len(hits)} kit(s) for {inputs['query']!r}, best first:"]
    for number, hit in enumerate(hits, 1):
        kit = by_key[hit.key]
        names = ", ".join(d["name"] for d in kit.datasets)
        lines.append(
            f"{number}. {kit.name!r} ({hit.score:.2f}): {kit.description[:300]} — datasets: {names}; "
            f"{len(kit.queries)} query(ies), {len(kit.charts)} chart(s); made {kit.created_at:%Y-%m-%d}"
        )
        lines.append(f"   load: search_kits {{load: {kit.name!r}}}")
    return Ok(rows=len(hits), data="\n".join(lines))


def _build(tenant_id: str) -> tuple:
    """The tenant's kit index and its kits by index key; vectors are the rows' own where current."""
    kits = list(Kit.objects.for_tenant(tenant_id))
    documents = [_document(kit) for kit in kits]
    stored = {f"kit:{kit.pk}": (kit.embedding, kit.embedding_model) for kit in kits}
    vectors, fresh = embed_missing(documents, stored)
    for key, (blob, tag) in fresh.items():
        Kit.objects.filter(pk=int(key.removeprefix("kit:"))).update(embedding=blob, embedding_model=tag)
    return build_index(documents, vectors), {f"kit:{kit.pk}": kit for kit in kits}


def _load(name: str, context: ToolContext) -> Ok:
    """Register the kit's datasets in this conversation and draw its charts from them."""
    kits = Kit.objects.for_tenant(context.tenant_id)
    kit = kits.filter(name=name).first()
    if kit is None:
        known = list(kits.values_list("name", flat=True))
        raise HintException(
            "schema", f"load: no kit named {name!r}; search_kits with a query finds kits", ranked(closest(name, known))
        )
    books = catalog(context)
    taken = {
        entry.name
        for entry in books.entries()
        if entry.name in {d["name"] for d in kit.datasets}
        and (entry.source, entry.source_detail) != (KIT_SOURCE, kit.name)
    }
    if taken:
        raise HintException(
            "schema",
            f"load: this conversation already has dataset(s) {', '.join(sorted(taken))} that did not come from "
            f"kit {kit.name!r}; keep them under other names (query … save_as) and drop the originals, or load "
            "the kit in a new conversation",
        )
    frames = {}
    for dataset in kit.datasets:
        frames[dataset["name"]] = frame = read_parquet_file(dataset["path"])
        books.save(dataset["name"], frame, source=KIT_SOURCE, source_detail=kit.name)
    effects = Effects()
    for chart in kit.charts:
        drawn = chart_effects(
            books, chart["dataset"], chart_spec(frames[chart["dataset"]], chart["dataset"], chart), source_tool="kit"
        )
        effects.cards += drawn.cards
        effects.exports.update(drawn.exports)
    return Ok(rows=len(frames), data=_loaded_text(kit, frames), effects=effects)


def _loaded_text(kit: Kit, frames: dict) -> str:
    lines = [f"Kit {kit.name!r} loaded into this conversation: {kit.description[:300]}", "Datasets:"]
    for name, frame in frames.items():
        lines.append(f"- {name}: {len(frame):,} rows; columns {', '.join(map(str, frame.columns))}")
    if kit.queries:
        lines.append("Queries (run them with query):")
        lines += [f"- {q['title']}: {q['sql']}" for q in kit.queries]
    if kit.charts:
        lines.append(f"{len(kit.charts)} chart(s) drawn again for the user from the loaded datasets.")
    return "\n".join(lines)


TOOLS = (
    Tool(
        name="create_kit",
        description=(
            "Save this conversation's work as a reusable kit for the team: a name, what it is for, "
            "the datasets to keep (default all), the SQL queries worth rerunning and the charts to "
            "redraw. Other conversations of the tenant can then find and load it with search_kits."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 120, "description": "The kit's name."},
                "description": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "description": "What the kit is for and what it holds; it is how the kit is found.",
                },
                "datasets": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                    "minItems": 1,
                    "maxItems": MAX_DATASETS,
                    "uniqueItems": True,
                    "description": "Datasets of this conversation to copy into the kit (default: all).",
                },
                "queries": {
                    "type": "array",
                    "maxItems": MAX_QUERIES,
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "minLength": 1, "maxLength": 200},
                            "sql": {"type": "string", "minLength": 1, "maxLength": 20_000},
                        },
                        "required": ["title", "sql"],
                        "additionalProperties": False,
                    },
                    "description": "SQL over the kit's datasets worth running again, each with a title.",
                },
                "charts": {
                    "type": "array",
                    "maxItems": MAX_CHARTS,
                    "items": {
                        "type": "object",
                        "properties": CHART_PROPERTIES,
                        "required": ["dataset", "x", "y"],
                        "additionalProperties": False,
                    },
                    "description": "Charts (as create_chart draws them) of the kit's datasets.",
                },
                "replace": {
                    "type": "boolean",
                    "default": False,
                    "description": "Overwrite the tenant's kit of the same name.",
                },
            },
            "required": ["name", "description"],
            "additionalProperties": False,
        },
        handler=create_kit,
        category="data",
        status_message="Saving the kit",
        timeout_seconds=60,
        sequential=True,
    ),
    Tool(
        name="search_kits",
        description=(
            "Find kits (reusable bundles of datasets, queries and charts) that colleagues saved "
            "from other conversations, matched by meaning; then load one with load: '<kit name>' "
            "to bring its datasets into this conversation and redraw its charts."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "What the kit should be about, in plain words.",
                },
                "load": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 120,
                    "description": "The name of a kit to load into this conversation instead of searching.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "additionalProperties": False,
        },
        handler=search_kits,
        category="data",
        status_message="Looking through the kits",
        timeout_seconds=60,
    ),
)

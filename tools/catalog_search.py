"""search_catalog: find what this conversation can work with, by meaning.

One hybrid index (BM25 + the bundled encoders, ``registry.retrieval`` through
``tools.lib.hybrid``, the same machinery ``search_tools`` ranks with) over the
caller's catalog: the conversation's datasets, the files made in it or given to
the tenant, the documents and corpora they may read, and the tenant's entities
and kits.
Every kind is read through the access rule its own tools use, so a search never
names what the caller could not open (docs/access.md).

The index is kept per (tenant, conversation, caller) and rebuilt only when one
kind's fingerprint (count, last change) moves. Entities and kits reuse the
vectors stored on their rows; the other kinds' vectors are kept in a bounded in-process cache
keyed by the model and the embedded text, so a rebuild embeds only what is new.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Count, Max, Q, QuerySet
from django.db.models.functions import Substr

from registry.context import ToolContext
from registry.contract import HintException, Ok, measure_schema, uniform_contract
from registry.declarations import Tool
from registry.retrieval import ToolDocument
from tools import skill_shelf
from tools.lib.hybrid import MIN_SIMILARITY, IndexCache, as_document, build_index, vector_tag

if TYPE_CHECKING:
    import numpy as np

    from registry.retrieval import ToolSearchIndex

KINDS = ("dataset", "file", "document", "corpus", "entity", "kit", "skill")
# The newest this many of each kind are searched; older ones stay reachable through
# their own tools (list_entities, search_documents). Bounds the work of one rebuild.
MAX_PER_KIND = 1000
# Characters of a document's text that describe it (title aside).
DOCUMENT_EXCERPT = 600
# Vectors kept in memory for rows that store none (384 floats each: ~1.5 KB).
MAX_CACHED_VECTORS = 20_000
# Indexes kept, one per (tenant, conversation, caller).
MAX_INDEXES = 256


@dataclass(frozen=True)
class Item:
    """One thing in the catalog as the search returns it."""

    kind: str
    name: str
    summary: str
    how_to_use: str


# A row as the index sees it, as the model is told of it, and its stored vector (blob, tag).
_Described = tuple[ToolDocument, Item, bytes | None, str]


class _VectorCache:
    """Embeddings by vector tag (model, window, digest of the text), least recently used dropped."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, documents: list[ToolDocument], stored: Mapping[str, tuple[bytes, str]]) -> list[np.ndarray]:
        """Vectors for ``documents`` in order: stored on the row, cached, or embedded in one batch."""
        import numpy as np

        from registry.retrieval import Embedder

        tags = [vector_tag(doc) for doc in documents]
        found: list[np.ndarray | None] = []
        with self._lock:
            for doc, tag in zip(documents, tags, strict=True):
                blob, stored_tag = stored.get(doc.key, (None, ""))
                if blob is not None and stored_tag == tag:
                    found.append(np.frombuffer(bytes(blob), dtype=np.float32))
                    continue
                cached = self._vectors.get(tag)
                if cached is not None:
                    self._vectors.move_to_end(tag)
                found.append(cached)
        missing = [n for n, vector in enumerate(found) if vector is None]
        if missing:
            fresh = Embedder.default().embed([documents[n].embedding_text() for n in missing])
            with self._lock:
                for n, vector in zip(missing, fresh, strict=True):
                    found[n] = vector
                    self._vectors[tags[n]] = vector
                while len(self._vectors) > self._limit:
                    self._vectors.popitem(last=False)
        return [vector for vector in found if vector is not None]

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


_VECTORS = _VectorCache(MAX_CACHED_VECTORS)
_INDEXES = IndexCache(max_scopes=MAX_INDEXES)


def clear_cache() -> None:
    _VECTORS.clear()
    _INDEXES.clear()


# -- what the caller may see, one queryset per kind ---------------------------------


def _datasets(context: ToolContext) -> QuerySet:
    from datacatalog.models import CatalogDataset
    from datacatalog.store import ConversationCatalog, NoConversation

    try:
        books = ConversationCatalog.for_context(context)
    except NoConversation:
        return CatalogDataset.objects.none()
    return CatalogDataset.objects.in_conversation(books.tenant_id, books.conversation_id)


def _files(context: ToolContext) -> QuerySet:
    """Files the caller may read (datacatalog.access.readable_files) that belong to this
    conversation or to no conversation: another conversation's files are its catalog."""
    from datacatalog.access import readable_files

    here = Q(conversation__isnull=True)
    if context.conversation_id:
        here |= Q(conversation_id=context.conversation_id)
    return readable_files(context).filter(here)


def _documents(context: ToolContext) -> QuerySet:
    from tools.lib.passages import readable_documents

    return readable_documents(context).select_related("corpus")


def _corpora(context: ToolContext) -> QuerySet:
    from tools.models import Corpus

    return Corpus.objects.for_tenant(context.tenant_id)


def _entities(context: ToolContext) -> QuerySet:
    from tools.models import Entity

    return Entity.objects.for_tenant(context.tenant_id)


def _kits(context: ToolContext) -> QuerySet:
    from tools.models import Kit

    return Kit.objects.for_tenant(context.tenant_id)


def _skills(context: ToolContext) -> QuerySet:
    from tools.models import Skill

    return Skill.objects.usable().filter(tenant_id=context.tenant_id)


_ROWS: dict[str, Callable[[ToolContext], QuerySet]] = {
    "dataset": _datasets,
    "file": _files,
    "document": _documents,
    "corpus": _corpora,
    "entity": _entities,
    "kit": _kits,
    "skill": _skills,
}
# The field that moves when a row of the kind changes (an entity's facts touch its
# updated_at; a corpus changes only by being made or removed).
_CHANGED = {
    "dataset": "updated_at",
    "file": "created_at",
    "document": "updated_at",
    "corpus": "id",
    "entity": "updated_at",
    "kit": "updated_at",
    "skill": "updated_at",
}


def _fingerprint(context: ToolContext) -> tuple:
    """One aggregate query per kind: how many, the last id, the last change."""
    return tuple(
        (kind, *rows(context).aggregate(n=Count("id"), last=Max("id"), changed=Max(_CHANGED[kind])).values())
        for kind, rows in _ROWS.items()
    )


# -- how each kind is described to the index and to the model -------------------------


def _describe_datasets(rows: QuerySet) -> list[_Described]:
    described: list[_Described] = []
    for entry in rows.order_by("-updated_at", "-id")[:MAX_PER_KIND]:
        columns = ", ".join(_column(c) for c in (entry.columns or [])[:40])
        origin = f" from {entry.source_detail}" if entry.source_detail else ""
        summary = f"{entry.rows:,} rows; columns: {columns}{origin}"
        how = f"preview_data {{dataset: {entry.name!r}}}; SQL: query … FROM {entry.name}"
        item = Item("dataset", entry.name, summary[:300], how)
        described.append((as_document(f"dataset:{entry.pk}", entry.name, summary), item, None, ""))
    return described


def _column(column: dict) -> str:
    """A column as the index and the model read it: its name, its type and, where the
    dataset was profiled when saved, its range or its common values."""
    label = str(column.get("name"))
    if column.get("range"):
        return f"{label}: {column.get('dtype')}, {column['range']}"
    if column.get("values"):
        return f"{label}: {column.get('dtype')}, e.g. {', '.join(map(str, column['values']))}"
    return f"{label}: {column.get('dtype')}"


def _describe_files(rows: QuerySet) -> list[_Described]:
    described: list[_Described] = []
    for row in rows.order_by("-created_at", "-id")[:MAX_PER_KIND]:
        made = f", made by {row.source_tool}" if row.source_tool else ", uploaded"
        summary = f"file ({row.mime_type or 'unknown type'}, {row.size_bytes:,} bytes{made})"
        how = f"index_content {{corpus: …, items: [{{file_id: {row.pk}}}]}} to search its text"
        item = Item("file", row.filename, summary, how)
        described.append((as_document(f"file:{row.pk}", row.filename, summary), item, None, ""))
    return described


def _describe_documents(rows: QuerySet) -> list[_Described]:
    described: list[_Described] = []
    heads = rows.order_by("-updated_at", "-id").defer("text").annotate(head=Substr("text", 1, DOCUMENT_EXCERPT))
    for row in heads[:MAX_PER_KIND]:
        excerpt = " ".join(row.head.split())
        summary = f"document in corpus {row.corpus.name!r} ({row.format}, from {row.source}): {excerpt}"
        how = f"get_document_text {{document_id: {row.pk}}}; search_documents {{corpora: [{row.corpus.name!r}]}}"
        item = Item("document", row.title, summary[:300], how)
        described.append((as_document(f"document:{row.pk}", row.title, summary), item, None, ""))
    return described


def _describe_corpora(rows: QuerySet) -> list[_Described]:
    described: list[_Described] = []
    for row in rows.order_by("-id")[:MAX_PER_KIND]:
        summary = "corpus of indexed documents" + (f": {row.description}" if row.description else "")
        how = f"search_documents {{query: …, corpora: [{row.name!r}]}}"
        item = Item("corpus", row.name, summary[:300], how)
        described.append((as_document(f"corpus:{row.pk}", row.name, summary), item, None, ""))
    return described


def _describe_entities(rows: QuerySet) -> list[_Described]:
    from tools.lib import entity_store

    entities = list(rows.order_by("-updated_at", "-id").prefetch_related("aliases")[:MAX_PER_KIND])
    facts = entity_store.current_facts(entities)
    described: list[_Described] = []
    for entity in entities:
        # The text entity_store embeds, so the vector stored on the row is reused as it is.
        text = entity_store.describe(entity, facts[entity.pk], [a.alias for a in entity.aliases.all()])
        how = f"get_entity {{name: {entity.name!r}, entity_type: {entity.entity_type!r}}}"
        item = Item("entity", entity.name, text[:300], how)
        doc = as_document(f"entity:{entity.pk}", entity.name, text)
        described.append((doc, item, entity.embedding, entity.embedding_model))
    return described


def _describe_kits(rows: QuerySet) -> list[_Described]:
    from tools.kits import describe

    described: list[_Described] = []
    for kit in rows.order_by("-updated_at", "-id")[:MAX_PER_KIND]:
        # The text tools.kits embeds, so the vector stored on the row is reused as it is.
        text = describe(kit)
        item = Item("kit", kit.name, text[:300], f"search_kits {{load: {kit.name!r}}}")
        described.append((as_document(f"kit:{kit.pk}", kit.name, text), item, kit.embedding, kit.embedding_model))
    return described


def _describe_skills(rows: QuerySet) -> list[_Described]:
    described: list[_Described] = []
    # A row changed since its approval (a bulk update) is left out.
    for row in skill_shelf.usable(rows.order_by("-updated_at", "-id")[:MAX_PER_KIND]):
        item = Item("skill", row.name, f"skill: {row.description}"[:300], f"use_skill {{name: {row.name!r}}}")
        described.append((skill_shelf.document(row), item, None, ""))
    return described


_DESCRIBE = {
    "dataset": _describe_datasets,
    "file": _describe_files,
    "document": _describe_documents,
    "corpus": _describe_corpora,
    "entity": _describe_entities,
    "kit": _describe_kits,
    "skill": _describe_skills,
}


@dataclass
class _Catalog:
    index: ToolSearchIndex
    items: dict[str, Item]


def _build(context: ToolContext) -> _Catalog:
    described = [entry for kind, rows in _ROWS.items() for entry in _DESCRIBE[kind](rows(context))]
    documents = [doc for doc, _, _, _ in described]
    stored = {doc.key: (blob, tag) for doc, _, blob, tag in described if blob is not None}
    vectors = _VECTORS.vectors(documents, stored) if documents else []
    return _Catalog(build_index(documents, vectors), {doc.key: item for doc, item, _, _ in described})


def _catalog_of(context: ToolContext) -> _Catalog:
    scope = (context.tenant_id, str(context.conversation_id or ""), str(context.user_id or ""))
    return _INDEXES.get(scope, _fingerprint(context), lambda: _build(context))


def find(context: ToolContext, query: str, kinds: list[str] | None = None, limit: int = 5) -> list[tuple[Item, float]]:
    """The ``limit`` catalog items best matching ``query``, best first, among ``kinds`` (all by default)."""
    catalog = _catalog_of(context)
    if not catalog.items:
        return []
    wanted = frozenset(kinds or KINDS)
    allowed = (
        None if wanted == frozenset(KINDS) else [key for key, item in catalog.items.items() if item.kind in wanted]
    )
    if allowed == []:
        return []
    hits = catalog.index.search(query, limit, allowed, min_similarity=MIN_SIMILARITY, scope=context.tenant_id)
    return [(catalog.items[hit.key], hit.score) for hit in hits]


@uniform_contract(name="search_catalog", is_tabular=True)
def search_catalog(inputs: dict, context: ToolContext) -> Ok:
    """The datasets, files, documents, corpora, entities, kits and skills that match a description, best first."""
    import pandas as pd

    kinds = inputs.get("kinds")
    hits = find(context, inputs["query"], kinds, inputs.get("limit", 5))
    if not hits:
        scope = ", ".join(kinds) if kinds else "datasets, files, documents, corpora, entities, kits or skills"
        raise HintException(
            "fetch",
            f"nothing in this conversation's catalog ({scope}) matches {inputs['query']!r}",
            narrow="describe the content in other words (what it is about, not its file name), "
            "or drop `kinds`; an upload only appears once it is in the conversation",
        )
    frame = pd.DataFrame(
        [
            {
                "kind": item.kind,
                "name": item.name,
                "score": round(score, 3),
                "summary": item.summary,
                "how_to_use": item.how_to_use,
            }
            for item, score in hits
        ]
    )
    # The schema is measured from the matches; the body is a list the model reads
    # whole (a table preview would cut the summaries and the calls to 40 characters).
    lines = [f"{len(hits)} match(es) in the catalog for {inputs['query']!r}, best first:"]
    for number, (item, score) in enumerate(hits, 1):
        lines.append(f"{number}. {item.kind} {item.name!r} ({score:.2f}): {item.summary}")
        lines.append(f"   use: {item.how_to_use}")
    return Ok(rows=len(hits), schema=measure_schema(frame), data="\n".join(lines))


TOOLS = (
    Tool(
        name="search_catalog",
        description=(
            "Look up what this conversation's catalog already holds: its datasets, files, "
            "indexed documents, corpora, recorded entities and approved skills, and the team's saved "
            "kits, matched by meaning. Use it before asking the user for data or guessing a dataset "
            "name. Returns each match's "
            "kind, a summary and the call that opens it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "What you are looking for, in plain words.",
                },
                "kinds": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(KINDS)},
                    "minItems": 1,
                    "uniqueItems": True,
                    "description": "Only these kinds (default: all).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many matches to return (1-20, default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=search_catalog,
        category="data",
        status_message="Searching the catalog",
        timeout_seconds=30,
        input_examples=(
            {"query": "monthly revenue by region", "kinds": ["dataset"], "limit": 3},
            {"query": "contract renewal terms", "kinds": ["document", "corpus"]},
        ),
    ),
)

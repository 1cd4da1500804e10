"""Tool search over the live registry: the retrieval index, kept in step with the table.

Each tool's vector is stored on its row (``embedding`` plus ``embedding_model``,
which names the model and the text that was embedded, so a changed description
is re-embedded whoever changed it). The in-memory index is updated
incrementally whenever the registry's definitions change: new, changed,
retired, disconnected or re-approved tools cost one slot update each.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import TYPE_CHECKING

from registry.mcp.naming import remote_tool
from registry.models import ToolDefinition, ToolType
from registry.retrieval import MODEL_ID, ToolDocument
from registry.retrieval.documents import PASSAGE_TOKENS

if TYPE_CHECKING:
    import numpy as np

    from registry.handlers import TenantRequirement
    from registry.registry import ToolRegistry
    from registry.retrieval import ToolSearchIndex
    from registry.snapshot import Definition

logger = logging.getLogger("eunice.registry")

# Below this cosine a tool with no word in common with the query is unrelated:
# measured on the embedder, unrelated pairs score -0.05..0.07 and the weakest
# true matches in our tests 0.4.
MIN_SIMILARITY = 0.15


def document_for(definition: Definition) -> ToolDocument:
    """The tool as search reads it. An MCP tool is read by the name its server gives it:
    the registered name (``mcp_<tenant tag>_<server>_<tool>``: registry.mcp.naming) adds
    "mcp", which every such tool shares, and eight hex digits of the tenant, which mean
    nothing and would rank one server's tools differently for each tenant. The server's
    name is in the description already ("[MCP: github] ...")."""
    name = definition.name
    if definition.tool_type == ToolType.MCP:
        name = remote_tool(definition.implementation) or name
    return ToolDocument(
        key=definition.name,
        name=name,
        description=definition.description,
        input_schema=definition.input_schema,
    )


def vector_tag(document: ToolDocument, *, max_tokens: int | None = None) -> str:
    """What a stored vector was made from: the model, how much it read, a digest of the text."""
    digest = hashlib.sha1(document.embedding_text().encode()).hexdigest()[:16]
    window = f"/{max_tokens}wp" if max_tokens is not None else ""
    return f"{MODEL_ID}{window}#{digest}"[:128]


def load_models() -> bool:
    """Load the search models now (about 1.5 s of CPU and 290 MB here) rather
    than in the first search of the process; False, logged, when they cannot
    load (a search then reports it as it would have)."""
    from registry.retrieval import Embedder, EmbedderUnavailable

    try:
        Embedder.default()
    except EmbedderUnavailable as exc:
        logger.warning("tool search: the embedding models did not load at start: %s", exc)
        return False
    return True


def warm_up_index(registry: ToolRegistry) -> None:
    """Build the registry's search index and answer one query now, at start-up: the first
    ``search_tools`` call of a process would otherwise load the stored vectors, build
    BM25 and run the encoders' first inference (about 150 ms here, 3 s on a database
    whose tools were never embedded). Logged, never raised: a search then does it."""
    try:
        registry.tool_search().search("warm up the tool index", tenant_id="", limit=1)
    except Exception as exc:  # noqa: BLE001 - start-up goes on; the first search reports it
        logger.warning("tool search: the index was not built at start: %s", exc)


class ToolSearch:
    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._index: ToolSearchIndex | None = None
        self._signatures: dict[str, tuple] = {}
        self._generation = -1
        self._lock = threading.Lock()
        # Who may be offered what, per tenant, for one snapshot of the definitions:
        # checking 2,000 definitions on every search cost ~1.5 ms of a ~10 ms query.
        # Each tenant's names come with the narrower sets its tenant checks made of them
        # (by the names they held back), so that a search keeps handing the index the
        # same frozenset objects, whose masks it keeps.
        self._visible: dict[str, tuple[frozenset[str], dict[frozenset[str], frozenset[str]]]] = {}
        self._visible_in: tuple[dict[str, Definition], int] | None = None
        # The tools that also depend on what the tenant holds (``requires_tenant``), with their checks.
        self._tenant_checks: dict[str, TenantRequirement] = {}

    def search(
        self, query: str, tenant_id: str, limit: int, *, min_similarity: float | None = MIN_SIMILARITY
    ) -> list[tuple[Definition, float]]:
        """The ``limit`` best tools for ``query`` among those the tenant may be offered.

        Tools that share no word with the query and whose meaning is further
        than ``min_similarity`` from it are not returned. Raises ValueError
        for a blank query.
        """
        definitions = self._registry.definitions()
        index = self._synced(definitions)
        allowed = self._visible_names(definitions, tenant_id)
        hits = index.search(query, limit, allowed, min_similarity=min_similarity, scope=tenant_id)
        return [(definitions[hit.key], hit.score) for hit in hits if hit.key in definitions]

    def _visible_names(self, definitions: dict[str, Definition], tenant_id: str) -> frozenset[str]:
        """The names of the tools ``tenant_id`` may be offered (visible, and able to run:
        registry.availability), worked out once per snapshot and set of handlers, less
        those that what the tenant holds now rules out (``requires_tenant``: asked on
        every search, each check answering from its own cache).

        The registry replaces its definitions dict whenever a tool changes, and
        counts the handlers registered and removed, so the dict's identity and
        that count tell whether the kept answers still hold.
        """
        registry = self._registry
        with self._lock:
            current = self._visible_in
            if current is None or current[0] is not definitions or current[1] != registry.availability_generation:
                self._visible, self._visible_in = {}, (definitions, registry.availability_generation)
                self._tenant_checks = {
                    name: check for name in definitions if (check := registry.tenant_requirement(name)) is not None
                }
            kept = self._visible.get(tenant_id)
            if kept is None:
                able = frozenset(
                    name
                    for name, d in definitions.items()
                    if d.visible_to(tenant_id) and registry.why_unavailable(d) is None
                )
                kept = self._visible[tenant_id] = (able, {})
            checks = self._tenant_checks
        names, narrowed = kept
        held_back = frozenset(name for name, check in checks.items() if name in names and check(tenant_id) is not None)
        if not held_back:
            return names
        allowed = narrowed.get(held_back)
        if allowed is None:
            allowed = narrowed.setdefault(held_back, names - held_back)
        return allowed

    def _synced(self, definitions: dict[str, Definition]) -> ToolSearchIndex:
        generation = self._registry.snapshot_generation
        with self._lock:
            if self._index is None:
                from registry.retrieval import ToolSearchIndex

                self._index = ToolSearchIndex()
            if generation != self._generation:
                self._apply(definitions)
                self._generation = generation
            return self._index

    def _apply(self, definitions: dict[str, Definition]) -> None:
        index = self._index
        assert index is not None
        for name in [n for n in self._signatures if n not in definitions]:
            index.remove(name)
            del self._signatures[name]
        changed = {
            name: document_for(d) for name, d in definitions.items() if self._signatures.get(name) != _signature(d)
        }
        if not changed:
            return
        vectors = self._vectors(changed)
        for name, document in changed.items():
            if name in index:
                index.update(document, vectors[name])
            else:
                index.add(document, vectors[name])
            self._signatures[name] = _signature(definitions[name])

    def _vectors(self, documents: dict[str, ToolDocument]) -> dict[str, np.ndarray]:
        """Stored vectors where they are current; embed (and store) the rest in one batch."""
        import numpy as np

        tags = {name: vector_tag(doc, max_tokens=PASSAGE_TOKENS) for name, doc in documents.items()}
        stored = ToolDefinition.objects.filter(name__in=list(documents)).values_list(
            "name", "embedding", "embedding_model"
        )
        vectors = {
            name: np.frombuffer(bytes(blob), dtype=np.float32)
            for name, blob, tag in stored
            if blob is not None and tag == tags[name]
        }
        missing = [name for name in documents if name not in vectors]
        if missing:
            fresh = self._index.embedder.embed(
                [documents[n].embedding_text() for n in missing], max_tokens=PASSAGE_TOKENS
            )
            for name, vector in zip(missing, fresh, strict=True):
                vectors[name] = vector
                ToolDefinition.objects.filter(name=name).update(
                    embedding=vector.astype(np.float32).tobytes(), embedding_model=tags[name]
                )
            logger.info("tool search: embedded %d tool(s)", len(missing))
        return vectors


def _signature(definition: Definition) -> tuple:
    return (definition.description, definition.schema_key)

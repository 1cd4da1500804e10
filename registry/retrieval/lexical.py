"""An incremental BM25 index over integer slots.

Unlike a batch BM25 library, adding or removing one document touches only
that document's postings: corpus statistics (N, average length, idf) are
read at query time, so no change ever triggers a rebuild. Per-term posting
arrays are materialised lazily and cached until that term changes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

# Standard Okapi parameters; b < 0.75 because tool texts vary in length mostly
# through optional parameter lists, which should not punish the tool much.
K1 = 1.2
B = 0.5


class _Postings:
    """Slots holding one term, with their (weighted) term frequencies."""

    __slots__ = ("tf", "_arrays")

    def __init__(self) -> None:
        self.tf: dict[int, float] = {}
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None

    def set(self, slot: int, tf: float) -> None:
        self.tf[slot] = tf
        self._arrays = None

    def discard(self, slot: int) -> None:
        self.tf.pop(slot, None)
        self._arrays = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._arrays is None:
            slots = np.fromiter(self.tf.keys(), dtype=np.int64, count=len(self.tf))
            tfs = np.fromiter(self.tf.values(), dtype=np.float32, count=len(self.tf))
            self._arrays = (slots, tfs)
        return self._arrays


class BM25Index:
    """BM25 scores for weighted bags of tokens, addressed by slot number."""

    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._doc_terms: dict[int, Counter[str]] = {}
        self._lengths = np.zeros(0, dtype=np.float32)
        self._total_length = 0.0

    def __len__(self) -> int:
        return len(self._doc_terms)

    def set(self, slot: int, terms: Counter[str]) -> None:
        """Index (or re-index) `slot` with weighted term counts."""
        self.remove(slot)
        if slot >= len(self._lengths):
            grown = np.zeros(max(slot + 1, 2 * len(self._lengths), 64), dtype=np.float32)
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        length = float(sum(terms.values()))
        self._lengths[slot] = length
        self._total_length += length
        self._doc_terms[slot] = terms
        for term, tf in terms.items():
            self._postings.setdefault(term, _Postings()).set(slot, tf)

    def remove(self, slot: int) -> None:
        """Forget `slot`; a no-op if it is not indexed."""
        terms = self._doc_terms.pop(slot, None)
        if terms is None:
            return
        self._total_length -= float(self._lengths[slot])
        self._lengths[slot] = 0.0
        for term in terms:
            postings = self._postings[term]
            postings.discard(slot)
            if not postings.tf:
                del self._postings[term]

    def holds(self, term: str, among: np.ndarray) -> bool:
        """Whether a slot marked in the boolean array `among` holds `term`."""
        postings = self._postings.get(term)
        if postings is None:
            return False
        slots, _tfs = postings.arrays()
        return bool(among[slots[slots < len(among)]].any())

    def scores(self, query_terms: list[str], size: int, among: np.ndarray | None = None) -> np.ndarray:
        """BM25 score of every slot in `range(size)` for the query (0 where unmatched).

        With the boolean array `among`, the corpus statistics (number of
        documents, a term's document frequency, the average length) are those
        of the marked slots only, and only they are scored: a caller's ranking
        then depends on no text it may not see. Over shared statistics, how
        often some other tenant's tools use a word would move the order of the
        caller's own, which a caller can measure.
        """
        out = np.zeros(size, dtype=np.float32)
        if among is None:
            n_docs = len(self._doc_terms)
            total_length = self._total_length
        else:
            among = among[: min(size, len(self._lengths))]  # no slot past either holds a document
            n_docs = int(among.sum())
            total_length = float(self._lengths[:size][among].sum())
        if n_docs == 0:
            return out
        avg_length = total_length / n_docs
        for term, query_tf in Counter(query_terms).items():
            postings = self._postings.get(term)
            if postings is None:
                continue
            slots, tfs = postings.arrays()
            if among is not None:
                kept = among[slots]
                slots, tfs = slots[kept], tfs[kept]
            df = len(slots)
            if df == 0:
                continue
            idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
            norm = K1 * (1.0 - B + B * self._lengths[slots] / avg_length)
            out[slots] += (idf * query_tf) * tfs * (K1 + 1.0) / (tfs + norm)
        return out

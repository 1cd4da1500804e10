"""Tool and query embeddings: two small bundled encoders, concatenated.

A vector is `[minilm(text), sqrt(w) * use(text)] / sqrt(1 + w)`, so one dot
product of two such unit vectors is the weighted mean of the two cosines:
`(cos_minilm + w * cos_use) / (1 + w)`. One vector per tool keeps storage and
search simple while getting most of the benefit of an ensemble (MiniLM for
English paraphrase, USE for other languages). Loading costs ~1 s, so one
process-wide instance is created lazily by `Embedder.default()`.
"""

from __future__ import annotations

import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from registry.retrieval.documents import split_identifier
from registry.retrieval.encoders import (
    EmbedderUnavailable,
    MiniLMEncoder,
    MultilingualUSEEncoder,
    normalize_rows,
)
from registry.retrieval.space import MODEL_ID, USE_WEIGHT
from registry.retrieval.tokens import STOPWORDS

#: How many query vectors an embedder keeps (`embed_query`, per scope): one
#: search_tools call may rank tools and the tenant's skills with the same query,
#: and a model often repeats a query; 256 vectors are under 1 MB.
QUERY_CACHE_SIZE = 256

#: The share of a query's words the encoders must know for its vector to mean
#: anything (`Embedder.reads`): a plain majority.
READABLE_SHARE = 0.5

# Words as letters only: digits and punctuation carry no vocabulary to check.
_LETTERS = re.compile(r"[^\W\d_]+")
# Bounds on the vocabulary check, which tokenizes each word it asks about: a
# word past this length is no word of either vocabulary (a run of base64, say,
# took 35 ms to tokenize), an identifier past the next is not split into
# words to check, and this many words decide a majority.
_LONGEST_WORD = 24
_LONGEST_IDENTIFIER = 64
_WORDS_JUDGED = 64

DIMENSION = MiniLMEncoder.dimension + MultilingualUSEEncoder.dimension

__all__ = ["DIMENSION", "MODEL_ID", "USE_WEIGHT", "Embedder", "EmbedderUnavailable", "Reading", "normalize_rows"]


@dataclass(frozen=True, slots=True)
class Reading:
    """What the encoders make of a text's words (`Embedder.reading`).

    Keyboard mashing and invented words break into word pieces whose vectors
    sit close to every short text: their cosine to some tool (0.10-0.34 on
    our catalogs) is as high as a real request's to its right tool, so no
    similarity floor can tell them apart, but the vocabulary can. Stop words
    are not counted; a word outside ASCII (Chinese, accented Latin) counts as
    known, since neither vocabulary splits such words the way it splits
    invented ones. A text with no words at all (emoji, punctuation) is not
    read.

    Neither encoder holds much technical vocabulary whole ("csv", "xlsx",
    "spreadsheet", "histogram", "parquet" are all pieces). So a word made of
    whole words run together ("spreadsheet") or a camel-case identifier of
    known words ("XMLHttpRequest") counts as known (`Embedder.reading`), and
    a search passes the words of the tools its caller may see as
    `vocabulary`: a word a tool's description uses is a real word wherever
    that tool is offered.
    """

    words: int
    #: The counted words neither encoder knows whole, as written.
    unknown: tuple[str, ...]

    def reads(self, vocabulary: Callable[[str], bool] | None = None) -> bool:
        """Whether most words are known: to the encoders, or to `vocabulary`."""
        if not self.words:
            return False
        missing = len(self.unknown)
        if vocabulary is not None and missing:
            missing -= sum(1 for word in self.unknown if vocabulary(word))
        return self.words - missing >= READABLE_SHARE * self.words


class Embedder:
    """Turns texts into L2-normalised float32 vectors of size `DIMENSION`."""

    _default: ClassVar[Embedder | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    model_id: ClassVar[str] = MODEL_ID
    dimension: ClassVar[int] = DIMENSION

    def __init__(self, minilm: MiniLMEncoder | None = None, use: MultilingualUSEEncoder | None = None) -> None:
        """Load both encoders (or take loaded ones). Raises `EmbedderUnavailable`."""
        self._minilm = minilm or MiniLMEncoder()
        self._use = use or MultilingualUSEEncoder()
        self._use_scale = math.sqrt(USE_WEIGHT)
        self._norm = math.sqrt(1.0 + USE_WEIGHT)
        self._queries: OrderedDict[tuple[Hashable, str], np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @classmethod
    def default(cls) -> Embedder:
        """The process-wide embedder, loaded on first use. Raises `EmbedderUnavailable`."""
        if cls._default is None:
            with cls._default_lock:
                if cls._default is None:
                    cls._default = cls()
        return cls._default

    def reads(self, text: str, *, vocabulary: Callable[[str], bool] | None = None) -> bool:
        """Whether the encoders can find meaning in `text`: most of its words are
        ones MiniLM or the multilingual encoder knows whole, or that `vocabulary`
        holds (`Reading`)."""
        return self.reading(text).reads(vocabulary)

    def reading(self, text: str) -> Reading:
        """How many of the words of `text` count, and which of them the encoders do
        not know whole: the part of `reads` that needs the encoders' vocabularies,
        so that a caller can ask about the rest (`Reading.reads`) without them."""
        words = [word for word in _LETTERS.findall(text) if word.lower() not in STOPWORDS][:_WORDS_JUDGED]
        unknown = tuple(word for word in words if word.isascii() and not self._knows_identifier(word))
        return Reading(len(words), unknown)

    def _knows_identifier(self, word: str) -> bool:
        """`_knows`, and a camel-case identifier ("getStoryWithComments", "XMLHttpRequest")
        counts as known when each of its parts is a known word of two letters or more: a
        run of mixed case (base64, say) splits into fragments, and single letters are
        whole entries of the vocabulary."""
        if self._knows(word.lower()):
            return True
        if len(word) > _LONGEST_IDENTIFIER:
            return False
        parts = split_identifier(word)  # lower-cased, as the index splits names
        return len(parts) > 1 and all(len(part) > 1 and self._knows(part) for part in parts)

    def _knows(self, word: str) -> bool:
        return len(word) <= _LONGEST_WORD and (
            self._minilm.knows(word) or self._use.knows(word) or self._minilm.knows_as_compound(word)
        )

    def embed_query(self, text: str, *, scope: Hashable | None = None) -> np.ndarray:
        """The unit vector of one query text, read-only.

        With a `scope` (the tenant searching), the vector is kept among the
        last `QUERY_CACHE_SIZE` queries' and a repeat of the text in that same
        scope costs a dictionary look-up instead of ~5-10 ms. Another scope
        never gets a kept vector: how fast a search answers would tell a
        caller whether someone else had just searched for the same words.
        Without a scope nothing is kept.
        """
        if scope is None:
            vector = self.embed([text])[0]
            vector.flags.writeable = False
            return vector
        key = (scope, text)
        with self._queries_lock:
            vector = self._queries.get(key)
            if vector is not None:
                self._queries.move_to_end(key)
                return vector
        vector = self.embed([text])[0]
        vector.flags.writeable = False
        with self._queries_lock:
            self._queries[key] = vector
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    def embed(self, texts: list[str], *, max_tokens: int | None = None) -> np.ndarray:
        """Embed `texts` into a (len(texts), DIMENSION) float32 array of unit vectors.

        With `max_tokens`, both encoders read only the part of each text
        that fits in that many MiniLM word pieces; without, MiniLM reads its
        whole window and USE the whole text. Keeps the input order; an empty
        list gives a (0, DIMENSION) array. Raises ValueError for a
        `max_tokens` below 3 or past MiniLM's window.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if max_tokens is not None:
            texts = self._minilm.clip(texts, max_tokens)
        minilm = self._minilm.encode(texts)
        use = self._use.encode(texts) * self._use_scale
        return np.concatenate([minilm, use], axis=1) / self._norm

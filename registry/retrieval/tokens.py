"""Lexical analysis shared by documents and queries: words, stems, CJK n-grams."""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

from registry.retrieval.documents import split_identifier

# Latin words/identifiers, or runs of CJK ideographs / kana / hangul.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")

# Words that carry no signal about which tool is meant. Kept short on purpose:
# "get", "list", "create" and similar verbs *do* separate tools.
STOPWORDS = frozenset(
    """a about an and any are as at be been but by can could do does for from has have how
    i if in into is it its me my of on or our please so some than that the their them then
    there these this those to was we were what when where which who will with would you your
    i'm want need like just also should""".split()
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # Queries repeat a small vocabulary; caching saves the C call and the str alloc.
    return _stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Split `text` into stemmed lexical tokens.

    Latin text: identifiers are split (snake/camel case), lower-cased, stop
    words dropped, Snowball-stemmed. CJK text has no spaces, so each run is
    indexed as character unigrams and bigrams. Never raises.
    """
    tokens: list[str] = []
    for match in _TOKEN.findall(text):
        if _CJK_RUN.fullmatch(match):
            tokens.extend(match)
            tokens.extend(match[i : i + 2] for i in range(len(match) - 1))
            continue
        for word in split_identifier(match):
            if word not in STOPWORDS:
                tokens.append(_stem(word))
    return tokens

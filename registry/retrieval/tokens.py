"""Lexical analysis shared by documents and queries: words, stems, CJK n-grams."""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

from registry.retrieval.documents import split_identifier

# Latin words/identifiers (with any apostrophes inside them: "what's", "don't"),
# or runs of CJK ideographs / kana / hangul.
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+(?:['\u2019][A-Za-z]+)*|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
# English clitics: "'s" of possession or "is", "'re", "'ll", "'d", "'m", "'ve".
_CLITIC = re.compile(r"'(?:s|re|ll|d|m|ve)$")

# Words that carry no signal about which tool is meant. Kept short on purpose:
# "get", "list", "create" and similar verbs *do* separate tools.
STOPWORDS = frozenset(
    """a about an and any are as at be been but by can could do does for from has have how
    i if in into is it its me my of on or our please so some than that the their them then
    there these this those to was we were what when where which who will with would you your
    want need like just also should""".split()
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    # Queries repeat a small vocabulary; caching saves the C call and the str alloc.
    return _stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Split `text` into stemmed lexical tokens.

    Latin text: identifiers are split (snake/camel case), lower-cased,
    contractions and possessives reduced to their word, stop words dropped,
    Snowball-stemmed. CJK text has no spaces, so each run is
    indexed as character unigrams and bigrams. Never raises.
    """
    tokens: list[str] = []
    for match in _TOKEN.findall(text):
        if _CJK_RUN.fullmatch(match):
            tokens.extend(match)
            tokens.extend(match[i : i + 2] for i in range(len(match) - 1))
            continue
        words = _contracted_word(match) if "'" in match or "\u2019" in match else split_identifier(match)
        for word in words:
            if word not in STOPWORDS:
                tokens.append(_stem(word))
    return tokens


def _contracted_word(match: str) -> list[str]:
    """The word inside a contraction or possessive: "what's" -> what, "Tasty's" -> tasty.

    Negated auxiliaries ("don't", "isn't") are function words and give nothing;
    split at the apostrophe, they would leave stray "s", "t" and "m" tokens
    that match every description with a possessive in it.
    """
    word = match.replace("\u2019", "'").lower()
    if word.endswith("n't"):
        return []
    return split_identifier(_CLITIC.sub("", word).replace("'", ""))

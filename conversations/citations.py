"""The ``cited_answer`` card: each claim of an answer linked to the passages it cites.

search_documents leaves a ``document_passages`` card per search; the model
cites a passage by its id in brackets (``[p12]``, ``[p12, p15]``) after a
claim. At the end of the response the passage cards are consumed and, when
the answer cites at least one passage it was shown, replaced by one
``cited_answer`` card (a singleton: the response has one answer).
"""

from __future__ import annotations

import re

from registry.cards import CardType

PASSAGES_CARD = CardType.DOCUMENT_PASSAGES

_CITATION = re.compile(r"\[(p\d+(?:\s*,\s*p\d+)*)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")


def _without_citations(text: str) -> str:
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(_CITATION.sub("", text).split()))


def attach_citations(final_text: str, cards: list[dict]) -> list[dict]:
    """``cards`` with the passage cards replaced by a cited_answer card for ``final_text``.

    Citations of passages the response never retrieved are listed under
    ``unresolved`` rather than trusted. Never raises for odd text.
    """
    passages: dict[str, dict] = {}
    for card in cards:
        if card.get("type") == PASSAGES_CARD:
            for passage in card.get("passages", []):
                passages.setdefault(passage["id"], passage)
    kept = [card for card in cards if card.get("type") != PASSAGES_CARD]
    if not passages:
        return kept
    claims, cited, unresolved = _claims(final_text, passages)
    if not cited:
        return kept
    card = {
        "type": CardType.CITED_ANSWER,
        "answer": "\n".join(_without_citations(line) for line in final_text.splitlines()).strip(),
        "claims": claims,
        "passages": [passages[pid] for pid in cited],
        "sources": _sources(passages[pid] for pid in cited),
        "unresolved": unresolved,
    }
    return [*kept, card]


def _claims(text: str, passages: dict[str, dict]) -> tuple[list[dict], list[str], list[str]]:
    claims: list[dict] = []
    cited: list[str] = []
    unresolved: list[str] = []
    for sentence in _SENTENCE.split(text):
        ids = [pid.strip() for group in _CITATION.findall(sentence) for pid in group.split(",")]
        if not ids:
            continue
        known = [pid for pid in dict.fromkeys(ids) if pid in passages]
        unresolved.extend(pid for pid in ids if pid not in passages and pid not in unresolved)
        if known:
            claims.append({"text": _without_citations(sentence), "passages": known})
            cited.extend(pid for pid in known if pid not in cited)
    return claims, cited, unresolved


def _sources(passages) -> list[dict]:
    seen: dict[int, dict] = {}
    for passage in passages:
        entry = seen.setdefault(
            passage["document_id"],
            {
                "document_id": passage["document_id"],
                "title": passage["title"],
                "source": passage["source"],
                "passages": [],
            },
        )
        entry["passages"].append(passage["id"])
    return list(seen.values())

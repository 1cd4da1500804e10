"""Closest tools to a name the model got wrong, so its next call can be right."""

from __future__ import annotations

import difflib
import logging
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.registry import ToolRegistry

logger = logging.getLogger("eunice.registry")

_WORDS = re.compile(r"[a-z0-9]+")
MIN_SCORE = 0.35
SEARCH_DEPTH = 10
SPELLING_GATE = 0.3


def words(text: str) -> set[str]:
    """Lower-case words of ``text``; snake_case and camelCase are split."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return set(_WORDS.findall(spaced.lower()))


def closest_tools(registry: ToolRegistry, name: str, tenant_id: str, *, limit: int = 3) -> list[dict]:
    """Up to ``limit`` tools the tenant is offered, ranked by how well they match ``name``:
    never a tool it could not run here (``ToolRegistry.offered_to``), which would only
    earn the model a second hint.

    Each is ``{label, score, input_schema}``. The score (0-1) blends spelling
    similarity of the names with the tool's rank when the tool-search index is
    asked for the name's words, so both ``serch_tools`` (a typo) and
    ``find_tool`` (a guess at what it might be called) land on ``search_tools``.
    """
    ranks = _search_ranks(registry, name, tenant_id)
    matcher = difflib.SequenceMatcher(b=name.lower())
    scored = []
    for definition in registry.definitions().values():
        if not registry.offered_to(definition, tenant_id):
            continue
        matcher.set_seq1(definition.name.lower())
        spelling = matcher.ratio()
        rank = ranks.get(definition.name)
        # The index ranks every tool, however unrelated; its rank only counts
        # for names that share some spelling with what the model wrote.
        found = 0.0 if rank is None or spelling < SPELLING_GATE else 1.0 - rank / SEARCH_DEPTH
        score = 0.6 * spelling + 0.4 * found
        if score >= MIN_SCORE:
            scored.append((score, definition))
    scored.sort(key=lambda item: (-item[0], item[1].name))
    return [{"label": d.name, "score": round(score, 2), "input_schema": d.input_schema} for score, d in scored[:limit]]


def _search_ranks(registry: ToolRegistry, name: str, tenant_id: str) -> dict[str, int]:
    query = " ".join(sorted(words(name)))
    if not query:
        return {}
    from registry.retrieval import EmbedderUnavailable

    try:
        hits = registry.tool_search().search(query, tenant_id, SEARCH_DEPTH)
    except EmbedderUnavailable as exc:  # spelling alone still gives useful suggestions
        logger.warning("tool search unavailable for suggestions: %s", exc)
        return {}
    return {definition.name: rank for rank, (definition, _) in enumerate(hits)}

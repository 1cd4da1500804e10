"""Closest tools to a name the model got wrong, so its next call can be right."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.registry import ToolRegistry

_WORDS = re.compile(r"[a-z0-9]+")
MIN_SCORE = 0.35


def words(text: str) -> set[str]:
    """Lower-case words of ``text``; snake_case and camelCase are split."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return set(_WORDS.findall(spaced.lower()))


def closest_tools(registry: "ToolRegistry", name: str, tenant_id: str, *, limit: int = 3) -> list[dict]:
    """Up to ``limit`` tools the tenant may use, ranked by how well they match ``name``.

    Each is ``{label, score, input_schema}``; the score (0-1) blends spelling
    similarity of the names with how many of the name's words the tool's name
    and description contain, so both ``serch_tools`` and ``find_tool`` land on
    ``search_tools``.
    """
    wanted = words(name)
    matcher = difflib.SequenceMatcher(b=name.lower())
    scored = []
    for definition in registry.definitions().values():
        if not definition.visible_to(tenant_id):
            continue
        matcher.set_seq1(definition.name.lower())
        spelling = matcher.ratio()
        overlap = 0.0
        if wanted:
            have = words(definition.name) | words(definition.description)
            overlap = len(wanted & have) / len(wanted)
        score = 0.7 * spelling + 0.3 * overlap
        if score >= MIN_SCORE:
            scored.append((score, definition))
    scored.sort(key=lambda item: (-item[0], item[1].name))
    return [
        {"label": d.name, "score": round(score, 2), "input_schema": d.input_schema}
        for score, d in scored[:limit]
    ]

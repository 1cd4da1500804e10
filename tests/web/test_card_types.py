"""The chat page and the server agree on the card types, both ways, through registry.cards.

The page's drawing code (static/eunice/chat.js) and every place the server
makes a card (tools, the MCP client, citations, approvals, file exports) are
read as source: a card type either names must be in CardType, and every
CardType must be drawn by the page the way DRAWN_AS says.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from registry.cards import DRAWN_AS, INLINE, CardType, Drawing

ROOT = Path(__file__).resolve().parents[2]
CHAT_JS = (ROOT / "static" / "eunice" / "chat.js").read_text(encoding="utf-8")
APP_PACKAGES = ("conversations", "datacatalog", "registry", "tools")


def _function(js: str, name: str) -> str:
    """The source of the top-level-in-the-IIFE function ``name`` (up to the next one)."""
    start = js.index(f"function {name}(")
    following = re.search(r"\n  function ", js[start + 1 :])
    return js[start : start + 1 + following.start()] if following else js[start:]


def _compared_types(js: str) -> set[str]:
    return set(re.findall(r"card\.type\s*[!=]==\s*\"([a-z_]+)\"", js))


def _inline_types(js: str) -> set[str]:
    listed = re.search(r"const INLINE_CARDS = new Set\(\[([^\]]*)\]\)", js)
    assert listed, "chat.js no longer lists its INLINE_CARDS"
    return set(re.findall(r"\"([a-z_]+)\"", listed.group(1)))


def _server_card_types() -> dict[str, str]:
    """Each card type the server's source writes as a literal, with where (file:line)."""
    found: dict[str, str] = {}
    for package in APP_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in _card_dicts(ast.parse(path.read_text(encoding="utf-8"))):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant):
                        found.setdefault(value.value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _card_dicts(tree: ast.AST):
    """Dict literals that are cards: bound to ``card``, appended to ``cards``, under a
    ``"card"`` key, or returned by a function whose name says card."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "card" for t in node.targets):
            yield from _dicts(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and getattr(node.func.value, "id", "") == "cards"
        ):
            for arg in node.args:
                yield from _dicts(arg)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "card":
                    yield from _dicts(value)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "card" in node.name:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    yield from _dicts(inner.value)


def _dicts(node: ast.AST):
    if isinstance(node, ast.Dict):
        yield node


def test_every_card_type_the_page_names_is_listed():
    named = _compared_types(CHAT_JS) | _inline_types(CHAT_JS)
    assert named - set(CardType) == set()


def test_every_card_type_the_server_writes_is_listed():
    written = _server_card_types()
    assert written, "found no cards in the server's source: the scan is broken"
    unlisted = {kind: where for kind, where in written.items() if kind not in set(CardType)}
    assert unlisted == {}


def test_the_scan_sees_the_cards_the_tools_make():
    assert {"table", "chart", "map_display", "file_download"} <= set(_server_card_types())


def test_each_listed_type_is_drawn_as_the_list_says():
    own = _compared_types(_function(CHAT_JS, "renderCard"))
    for kind, drawing in DRAWN_AS.items():
        if drawing is Drawing.OWN:
            assert kind in own, f"renderCard has no branch for {kind}"
        else:
            assert kind not in own, f"renderCard draws {kind} itself, but DRAWN_AS says {drawing}"
    assert "Array.isArray(card.rows)" in _function(CHAT_JS, "renderCard")


def test_approval_cards_are_drawn_in_the_thread_not_the_panel():
    approval = [kind for kind, drawing in DRAWN_AS.items() if drawing is Drawing.APPROVAL]
    assert approval == [CardType.APPROVAL]
    assert 'chunk.card.type === "approval"' in CHAT_JS
    assert 'card.type !== "approval"' in _function(CHAT_JS, "settleCards")


def test_the_page_draws_inline_exactly_the_listed_inline_types():
    assert _inline_types(CHAT_JS) == set(INLINE)


def test_every_card_type_has_a_drawing():
    assert set(DRAWN_AS) == set(CardType)

"""ToolResult: what every dispatched tool call produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call.

    ``content`` is the text the model reads; ``error`` is None on success. The
    other fields are side channels the platform consumes (cards for the UI,
    datasets promoted into the conversation, exported files, USD cost).
    """

    content: str = ""
    cards: list[dict] = field(default_factory=list)
    cost: float = 0.0
    datasets: dict[str, Any] = field(default_factory=dict)
    exports: dict[str, dict] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(cls, message: str, content: str | None = None) -> ToolResult:
        return cls(content=content if content is not None else f"Error: {message}", error=message)

    @classmethod
    def from_any(cls, value: Any) -> ToolResult:
        """Normalise whatever a handler returned into a ToolResult.

        Accepts a ToolResult, the legacy ``{"message", "cards", "metadata"}``
        dict (``error``, ``cost``, ``datasets`` and ``exports`` keys are honoured
        when present), a plain string, or None. Anything else is rendered with
        ``str()`` so the model still sees it.
        """
        if isinstance(value, ToolResult):
            return value
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(content=value)
        if isinstance(value, dict) and looks_legacy(value):
            return _from_legacy_dict(value)
        if isinstance(value, (dict, list)):
            import json

            try:
                return cls(content=json.dumps(value, default=str, ensure_ascii=False))
            except (TypeError, ValueError):
                return cls(content=str(value))
        return cls(content=str(value))


_new = object.__new__


def succeeded(
    content: str, cards: list[dict], cost: float, datasets: dict[str, Any], exports: dict[str, dict]
) -> ToolResult:
    """``ToolResult(content, cards, cost, datasets, exports)``, every successful call's
    result: its fields set here, where calling the class runs its Python ``__init__``
    from C, which costs more (tests/test_tool_result.py compares the two)."""
    result = _new(ToolResult)
    result.content = content
    result.cards = cards
    result.cost = cost
    result.datasets = datasets
    result.exports = exports
    result.error = None
    return result


_LEGACY_KEYS = frozenset({"message", "cards", "metadata", "error"})


def looks_legacy(value: dict) -> bool:
    return bool(_LEGACY_KEYS.intersection(value))


def _from_legacy_dict(value: dict) -> ToolResult:
    error = value.get("error")
    message = value.get("message")
    content = "" if message is None else str(message)
    if error and not content:
        content = f"Error: {error}"
    cards = value.get("cards") or []
    if isinstance(cards, dict):
        cards = [cards]
    return ToolResult(
        content=content,
        cards=list(cards),
        cost=float(value.get("cost") or 0.0),
        datasets=dict(value.get("datasets") or {}),
        exports=dict(value.get("exports") or {}),
        error=str(error) if error else None,
    )

"""Per-tool Ok / Hint / Err tallies for contract telemetry, kept in process.

Pure bookkeeping: persisting the numbers (EventRecorder, a model) is the
caller's job; ``drain`` hands over and resets them in one step.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from registry.contract_types import Envelope, EnvelopeKind, Err, Hint, Ok

# The members read once: through their Enum class each read is a lookup in its members,
# and every dispatched call is classified.
_OK, _HINT, _ERR = EnvelopeKind.OK, EnvelopeKind.HINT, EnvelopeKind.ERR
_OK_CLASSIFIED = (_OK, None)


def classify(envelope: Envelope) -> tuple[str, str | None]:
    """Return ``("ok", None)``, ``("hint", hint_kind)`` or ``("err", err_kind)``.

    Raises TypeError for anything that is not an envelope.
    """
    if isinstance(envelope, Ok):
        return _OK_CLASSIFIED
    if isinstance(envelope, Hint):
        return _HINT, envelope.hint_kind
    if isinstance(envelope, Err):
        return _ERR, envelope.err_kind
    raise TypeError(f"not a contract envelope: {type(envelope).__name__}")


@dataclass(frozen=True, slots=True)
class ToolTally:
    """One tool's counts; ``hint_kinds`` / ``err_kinds`` split the hint and err totals."""

    ok: int = 0
    hint: int = 0
    err: int = 0
    hint_kinds: dict[str, int] = field(default_factory=dict)
    err_kinds: dict[str, int] = field(default_factory=dict)


class EnvelopeCounter:
    """Thread-safe tallies of envelopes by tool, kind and sub-kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[tuple[str, str, str | None]] = Counter()

    def record(self, tool: str, envelope: Envelope) -> None:
        """Count one envelope for ``tool``; raises TypeError for a non-envelope.

        Its signature fits ``wrap_for_dispatch(..., observer=counter.record)``.
        """
        key = (tool, *classify(envelope))
        with self._lock:
            self._counts[key] += 1

    def snapshot(self) -> dict[str, ToolTally]:
        """The current tallies by tool name, leaving them in place."""
        with self._lock:
            counts = dict(self._counts)
        return _tallies(counts)

    def drain(self) -> dict[str, ToolTally]:
        """The current tallies by tool name, resetting them atomically (for periodic persisting)."""
        with self._lock:
            counts, self._counts = dict(self._counts), Counter()
        return _tallies(counts)


def _tallies(counts: dict[tuple[str, str, str | None], int]) -> dict[str, ToolTally]:
    totals: dict[str, dict[str, int]] = {}
    sub_kinds: dict[str, dict[str, dict[str, int]]] = {}
    for (tool, kind, sub_kind), n in counts.items():
        tool_totals = totals.setdefault(tool, {"ok": 0, "hint": 0, "err": 0})
        tool_totals[kind] += n
        if sub_kind is not None:
            by_sub = sub_kinds.setdefault(tool, {"hint": {}, "err": {}})[kind]
            by_sub[sub_kind] = by_sub.get(sub_kind, 0) + n
    result = {}
    for tool, tool_totals in sorted(totals.items()):
        subs = sub_kinds.get(tool, {"hint": {}, "err": {}})
        result[tool] = ToolTally(**tool_totals, hint_kinds=subs["hint"], err_kinds=subs["err"])
    return result

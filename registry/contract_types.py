"""The Uniform Tool Contract's value types: the Ok | Hint | Err envelope and its parts.

Import these through ``registry.contract``; this module exists so the coercion,
render and counter modules can share the types without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from numbers import Real
from typing import Any, Literal


class EnvelopeKind(StrEnum):
    """What a call ended as; also ToolExecutionLog.outcome (registry.models.Outcome)."""

    OK = "ok"
    HINT = "hint"
    ERR = "err"


class HintKind(StrEnum):
    SCHEMA = "schema"  # the input does not fit the schema
    FETCH = "fetch"  # the ask is too broad or matched nothing: add or narrow
    AMBIGUOUS = "ambiguous"  # several things match: pick one of the alternatives


# What a handler may write instead of a HintKind member (checked when the Hint is made).
HintKindName = HintKind | Literal["schema", "fetch", "ambiguous"]
Provenance = Literal["measured", "inferred"]

HINT_KINDS: frozenset[str] = frozenset(HintKind)
ENVELOPE_KINDS: frozenset[str] = frozenset(EnvelopeKind)
PROVENANCES: frozenset[str] = frozenset({"measured", "inferred"})


@dataclass(slots=True)
class ColumnSpec:
    """One column of an Ok payload, measured from the data itself.

    ``dtype_provenance`` is "inferred" when the dtype comes from a single value
    (a one-row dict) rather than from a column of values; the counts are then None.
    """

    name: str
    dtype: str
    null_count: int | None = None
    distinct_count: int | None = None
    dtype_provenance: Provenance = "measured"


@dataclass(slots=True)
class Warning:  # noqa: A001 - the contract's own name; shadows the builtin only where imported
    """An in-band advisory riding on an Ok (no_match, data_quality, contract, ...)."""

    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


# What an argument left out of Ok's and Effects' own ``__init__`` is: a fresh empty container.
_FRESH: Any = object()


# eq=False: these hold DataFrames, whose ``==`` is elementwise and cannot be truth-tested.
# init=False: each dispatched call makes an Ok and its Effects, and the generated __init__
# calls ``list``/``dict``/``Effects`` for every field left out, where a literal ([] or {})
# is a third cheaper; these do the same with literals. The fields (``dataclasses.fields``,
# ``replace``) are as declared.
@dataclass(slots=True, eq=False, init=False)
class Effects:
    """Side channels the orchestrator (not the model) consumes."""

    cards: list[dict] = field(default_factory=list)
    datasets: dict[str, Any] = field(default_factory=dict)
    exports: dict[str, dict] = field(default_factory=dict)
    cost: float = 0.0

    def __init__(
        self,
        cards: list[dict] = _FRESH,
        datasets: dict[str, Any] = _FRESH,
        exports: dict[str, dict] = _FRESH,
        cost: float = 0.0,
    ) -> None:
        self.cards = [] if cards is _FRESH else cards
        self.datasets = {} if datasets is _FRESH else datasets
        self.exports = {} if exports is _FRESH else exports
        self.cost = cost


@dataclass(slots=True, eq=False, init=False)
class Ok:
    """A successful result: the payload, its true row count and its measured schema."""

    rows: int
    schema: list[ColumnSpec] = field(default_factory=list)
    data: Any = None
    warnings: list[Warning] = field(default_factory=list)
    effects: Effects = field(default_factory=Effects)

    def __init__(
        self,
        rows: int,
        schema: list[ColumnSpec] = _FRESH,
        data: Any = None,
        warnings: list[Warning] = _FRESH,
        effects: Effects = _FRESH,
    ) -> None:
        self.rows = rows
        self.schema = [] if schema is _FRESH else schema
        self.data = data
        self.warnings = [] if warnings is _FRESH else warnings
        self.effects = Effects() if effects is _FRESH else effects


_new = object.__new__


def text_ok(text: str) -> Ok:
    """``Ok(1 if text else 0, [], text)``: a handler's plain text as an Ok, the commonest
    result. Made by setting the fields of a new Ok and Effects here: calling the classes
    runs each one's Python ``__init__`` from C, a fifth of what the pair costs. The
    fields are Ok's and Effects' own (tests/contract/test_envelope_types.py compares them)."""
    ok = _new(Ok)
    ok.rows = 1 if text else 0
    ok.schema = []
    ok.data = text
    ok.warnings = []
    effects = _new(Effects)
    effects.cards = []
    effects.datasets = {}
    effects.exports = {}
    effects.cost = 0.0
    ok.effects = effects
    return ok


@dataclass(slots=True)
class Hint:
    """A correction the model can act on by calling again; not a platform failure.

    ``alternatives`` are stored ranked by descending score. ``add`` / ``narrow``
    carry a fetch hint's concrete suggestion (e.g. the filter to add).

    Raises ValueError for an unknown ``hint_kind``, an alternative without a
    ``label`` or a numeric ``score``, or ``add`` / ``narrow`` on a non-fetch hint.
    """

    hint_kind: HintKindName
    message: str
    alternatives: list[dict[str, Any]] = field(default_factory=list)
    add: str | None = None
    narrow: str | None = None

    def __post_init__(self) -> None:
        check_hint_kind(self.hint_kind)
        if self.hint_kind != HintKind.FETCH and (self.add is not None or self.narrow is not None):
            raise ValueError(f"add/narrow suggestions belong to fetch hints, not {self.hint_kind!r}")
        self.alternatives = rank_alternatives(self.alternatives)


@dataclass(slots=True)
class Err:
    """A failure re-calling cannot fix: an unhandled exception or a legacy error."""

    message: str
    err_kind: str


Envelope = Ok | Hint | Err


class HintException(Exception):
    """Raised by a handler to return a Hint instead of a result.

    The contract wrapper catches it before any other exception. Raises
    ValueError at construction for an unknown ``hint_kind`` or malformed
    alternatives, so a typo surfaces where it is made.
    """

    def __init__(
        self,
        hint_kind: HintKindName,
        message: str,
        alternatives: Iterable[Mapping[str, Any]] = (),
        *,
        add: str | None = None,
        narrow: str | None = None,
    ) -> None:
        super().__init__(message)
        self.hint = Hint(hint_kind, message, list(alternatives), add=add, narrow=narrow)

    @property
    def hint_kind(self) -> str:
        return self.hint.hint_kind

    @property
    def message(self) -> str:
        return self.hint.message

    @property
    def alternatives(self) -> list[dict[str, Any]]:
        return self.hint.alternatives


def check_hint_kind(hint_kind: str) -> None:
    """Raise ValueError, naming the valid kinds, unless ``hint_kind`` is one of them."""
    if hint_kind not in HINT_KINDS:
        valid = ", ".join(sorted(HINT_KINDS))
        raise ValueError(f"unknown hint_kind {hint_kind!r}; valid kinds: {valid}")


def rank_alternatives(alternatives: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return copies of ``alternatives`` sorted by descending score (stable for ties).

    Raises ValueError if one lacks a ``label`` or a real-number ``score``.
    """
    ranked = []
    for position, alternative in enumerate(alternatives):
        if "label" not in alternative:
            raise ValueError(f"alternative #{position + 1} has no 'label': {dict(alternative)!r}")
        score = alternative.get("score")
        # bool is a Real too, but True as a score is a bug, not a ranking.
        if not isinstance(score, Real) or isinstance(score, bool):
            raise ValueError(f"alternative #{position + 1} needs a numeric 'score', got {score!r}")
        ranked.append(dict(alternative))
    ranked.sort(key=lambda alternative: -alternative["score"])
    return ranked


def envelope_kind(envelope: Envelope) -> EnvelopeKind:
    """Return the envelope's EnvelopeKind; raise TypeError for anything that is not an envelope."""
    if isinstance(envelope, Ok):
        return EnvelopeKind.OK
    if isinstance(envelope, Hint):
        return EnvelopeKind.HINT
    if isinstance(envelope, Err):
        return EnvelopeKind.ERR
    raise TypeError(f"not a contract envelope: {type(envelope).__name__}")

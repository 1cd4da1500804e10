"""The Uniform Tool Contract: every dispatched tool call ends as Ok | Hint | Err.

``@uniform_contract(name=..., is_tabular=...)`` records a ToolSpec in one
module-level table and decorates a handler whose body returns ``Ok`` or raises
``HintException``; the decorated function always returns an envelope.

The registry calls ``wrap_for_dispatch(name, handler)`` once per tool at
registration; the returned callable is what dispatch invokes, and it coerces,
validates and reports every call. ``envelope_to_tool_result`` turns the
envelope back into the ToolResult the rest of the platform consumes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import threading
from collections.abc import Callable, Iterable
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from registry.contract_coerce import coerce_return, err_from_exception, measure, measure_schema
from registry.contract_counter import EnvelopeCounter, ToolTally, classify
from registry.contract_render import content_for_data, render_envelope, render_ok
from registry.contract_types import (
    ENVELOPE_KINDS,
    HINT_KINDS,
    ColumnSpec,
    Effects,
    Envelope,
    EnvelopeKind,
    Err,
    Hint,
    HintException,
    HintKind,
    Ok,
    Warning,
    envelope_kind,
)
from registry.result import ToolResult, succeeded

if TYPE_CHECKING:
    from registry.context import ToolContext

__all__ = [
    "ENVELOPE_KINDS",
    "HINT_KINDS",
    "ColumnSpec",
    "Effects",
    "Envelope",
    "EnvelopeCounter",
    "EnvelopeKind",
    "Err",
    "Hint",
    "HintException",
    "HintKind",
    "Ok",
    "ToolSpec",
    "ToolTally",
    "Warning",
    "classify",
    "coerce_return",
    "content_for_data",
    "envelope_to_tool_result",
    "measure",
    "measure_schema",
    "registered_names",
    "render_envelope",
    "spec_for",
    "uniform_contract",
    "validate_envelope",
    "wrap_for_dispatch",
]

logger = logging.getLogger(__name__)

# The JSON bytes a result's cards may take in all. Cards go to the chat page, the
# stored message and the REST API whole; a tool (an MCP server's structured
# content, a custom tool) must not make any of them carry megabytes.
MAX_CARDS_BYTES = 1024 * 1024

Handler = Callable[[dict, "ToolContext"], Any]
Dispatch = Callable[[dict, "ToolContext"], Any]
Observer = Callable[[str, Envelope], None]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolSpec:
    """How the contract treats one tool.

    ``is_tabular`` makes an empty-schema Ok a smell worth a warning;
    ``is_cost_rollup`` marks tools (delegate) whose cost already sums their
    leaf calls; ``expected_envelopes`` lists the kinds ("ok", "hint", "err") the
    tool may return. Raises ValueError for an empty name or an unknown or empty
    set of kinds.
    """

    name: str
    handler: Handler
    is_tabular: bool
    is_cost_rollup: bool = False
    expected_envelopes: frozenset[str] = ENVELOPE_KINDS

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a tool spec needs a name")
        kinds = frozenset(self.expected_envelopes)
        if not kinds or not kinds <= ENVELOPE_KINDS:
            valid = ", ".join(sorted(ENVELOPE_KINDS))
            raise ValueError(f"expected_envelopes must be a non-empty subset of: {valid}; got {sorted(kinds)}")
        object.__setattr__(self, "expected_envelopes", kinds)


_TOOL_SPECS: dict[str, ToolSpec] = {}
_SPECS_LOCK = threading.Lock()


def spec_for(name: str) -> ToolSpec | None:
    """The registered spec for ``name``, or None if the tool has none."""
    return _TOOL_SPECS.get(name)


def registered_names() -> frozenset[str]:
    """Names of every tool with a registered spec."""
    return frozenset(_TOOL_SPECS)


def uniform_contract(
    *,
    name: str,
    is_tabular: bool,
    is_cost_rollup: bool = False,
    expected_envelopes: Iterable[str] = ENVELOPE_KINDS,
) -> Callable[[Handler], Dispatch]:
    """Decorate a handler written against the contract and register its spec.

    The decorated function always returns an envelope (a coroutine resolving to
    one for an ``async def`` handler): a raised HintException becomes a Hint,
    any other exception an Err. Raises ValueError if ``name`` already has a spec for a
    different handler or different flags, or if the spec itself is invalid (see ToolSpec).
    """

    def decorate(handler: Handler) -> Dispatch:
        spec = ToolSpec(name, handler, is_tabular, is_cost_rollup, frozenset(expected_envelopes))
        _register(spec)
        return _build_dispatch(handler, spec, observer=None)

    return decorate


def wrap_for_dispatch(name: str, handler: Handler, *, observer: Observer | None = None) -> Dispatch:
    """Return the callable dispatch should invoke for tool ``name``: ``(inputs, context) -> envelope``.

    Call once, at registration: the spec is looked up now, so register specs
    (import the tool modules) first. A tool with no spec is wrapped with a
    non-tabular default spec that is not registered. ``observer(name, envelope)``,
    if given, sees every envelope (telemetry); its failures are logged, never
    raised into the call. ``handler`` is not modified; an already-wrapped or
    ``@uniform_contract`` handler is re-wrapped from its original body, never
    twice. The result is a coroutine function when the handler is async.

    Raises ValueError if ``handler`` was decorated for a different tool name.
    """
    marked: ToolSpec | None = getattr(handler, "__contract_spec__", None)
    if marked is not None and marked.name != name:
        raise ValueError(f"handler was registered for tool {marked.name!r}, not {name!r}")
    body: Handler = getattr(handler, "__contract_body__", handler)
    spec = spec_for(name) or marked or ToolSpec(name, body, is_tabular=False)
    return _build_dispatch(body, spec, observer)


def validate_envelope(envelope: Envelope, spec: ToolSpec) -> Envelope:
    """Return ``envelope`` with the spec's contract problems reported in band.

    An empty schema from a tabular tool, or an Ok outside ``expected_envelopes``,
    adds a ``contract`` Warning to the Ok. A Hint or Err outside
    ``expected_envelopes`` gets a ``⚠ contract:`` line appended to its message
    (they have no warnings field). Nothing is ever dropped. Raises TypeError
    for a non-envelope.
    """
    kind = envelope_kind(envelope)
    unexpected = kind not in spec.expected_envelopes
    note = ""
    if unexpected:
        expected = ", ".join(sorted(spec.expected_envelopes))
        note = f"tool {spec.name!r} returned {kind}, outside its expected envelopes ({expected})"
    if isinstance(envelope, Ok):
        found = []
        if unexpected:
            found.append(Warning("contract", note, {"tool": spec.name, "envelope": kind}))
        if spec.is_tabular and not envelope.schema:
            found.append(
                Warning("contract", f"tabular tool {spec.name!r} returned an empty schema", {"tool": spec.name})
            )
        if found:
            return dataclasses.replace(envelope, warnings=[*envelope.warnings, *found])
        return envelope
    if unexpected:
        return dataclasses.replace(envelope, message=f"{envelope.message}\n⚠ contract: {note}")
    return envelope


def envelope_to_tool_result(envelope: Envelope) -> ToolResult:
    """The ToolResult dispatch hands on: content is the render; only Err sets ``error``.

    Cards past MAX_CARDS_BYTES are left out, with a ``size`` warning the model
    reads. Raises TypeError for a non-envelope.
    """
    if isinstance(envelope, Ok):
        effects = envelope.effects
        # The Ok's own list, as its datasets and exports are (and its cards when all fit).
        cards = effects.cards
        if cards:
            cards, left_out = _within_card_budget(cards)
            if left_out:
                envelope = dataclasses.replace(envelope, warnings=[*envelope.warnings, left_out])
        return succeeded(render_ok(envelope), cards, effects.cost, effects.datasets, effects.exports)
    content = render_envelope(envelope)
    if isinstance(envelope, Hint):
        return ToolResult(content=content)
    return ToolResult(content=content, error=envelope.message)


def _within_card_budget(cards: list[dict]) -> tuple[list[dict], Warning | None]:
    """The cards, in order, while their JSON fits MAX_CARDS_BYTES; the others
    are named in a Warning. Only results with cards pay for the measuring."""
    kept: list[dict] = []
    omitted: list[str] = []
    used = 0
    for card in cards:
        size = len(json.dumps(card, default=str, separators=(",", ":")).encode())
        if used + size > MAX_CARDS_BYTES:
            omitted.append(f"{card.get('type', 'card') if isinstance(card, dict) else 'card'} ({size:,} bytes)")
            continue
        used += size
        kept.append(card)
    if not omitted:
        return cards, None
    message = (
        f"{len(omitted)} card(s) left out of what the user sees: {', '.join(omitted[:5])}; "
        f"a result's cards may take {MAX_CARDS_BYTES:,} bytes"
    )
    return kept, Warning("size", message, {"omitted": omitted[:20], "limit_bytes": MAX_CARDS_BYTES})


def _register(spec: ToolSpec) -> None:
    with _SPECS_LOCK:
        existing = _TOOL_SPECS.get(spec.name)
        if existing is not None and not _same_registration(existing, spec):
            raise ValueError(
                f"tool {spec.name!r} already has a contract spec (handler {_where(existing.handler)}); "
                "names are never reused or renamed silently"
            )
        _TOOL_SPECS[spec.name] = spec


def _same_registration(old: ToolSpec, new: ToolSpec) -> bool:
    # Re-importing a module (autoreload, tests) registers a new function object
    # for the same code; that is the same tool, not a clash.
    same_flags = (old.is_tabular, old.is_cost_rollup, old.expected_envelopes) == (
        new.is_tabular,
        new.is_cost_rollup,
        new.expected_envelopes,
    )
    return same_flags and (old.handler is new.handler or _where(old.handler) == _where(new.handler))


def _where(handler: Handler) -> str:
    return f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', repr(handler))}"


def _is_async(handler: Handler) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    # A callable object whose __call__ is async.
    call = type(handler).__call__
    return not inspect.isroutine(handler) and inspect.iscoroutinefunction(call)


def _build_dispatch(body: Handler, spec: ToolSpec, observer: Observer | None) -> Dispatch:
    """Build the per-call wrapper; everything decidable once is decided here."""
    finish = _finisher(spec, observer)
    if _is_async(body):
        dispatch = _async_dispatch(body, spec.name, finish or _as_is)
    else:
        dispatch = _sync_dispatch(body, spec.name, finish)
    functools.update_wrapper(dispatch, body, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=())
    dispatch.__contract_spec__ = spec  # type: ignore[attr-defined]
    dispatch.__contract_body__ = body  # type: ignore[attr-defined]
    return dispatch


def _finisher(spec: ToolSpec, observer: Observer | None) -> Callable[[Envelope], Envelope] | None:
    """Validation and reporting for every envelope, reduced to what this spec needs;
    None when it needs neither (the wrapper then hands the envelope on as it is)."""
    name = spec.name
    needs_validation = spec.is_tabular or spec.expected_envelopes != ENVELOPE_KINDS
    if not needs_validation and observer is None:
        return None

    def finish(envelope: Envelope) -> Envelope:
        if needs_validation:
            envelope = validate_envelope(envelope, spec)
        if observer is not None:
            _notify(observer, name, envelope)
        return envelope

    return finish


def _as_is(envelope: Envelope) -> Envelope:
    """The finisher of a spec that needs none, where a callable is wanted."""
    return envelope


def _sync_dispatch(body: Handler, name: str, finish: Callable[[Envelope], Envelope] | None) -> Dispatch:
    settled = finish or _as_is

    def dispatch(inputs: dict, context: ToolContext) -> Any:
        try:
            value = body(inputs, context)
            if type(value) is CoroutineType:
                # A sync-looking callable handed back a coroutine: let the
                # registry await it like any async handler's result.
                return _settle(value, name, settled)
            envelope = coerce_return(value)
        except HintException as exc:
            envelope = exc.hint
        except Exception as exc:  # noqa: BLE001 - becomes a typed Err; the traceback goes to the log
            envelope = _failed(name, exc)
        return envelope if finish is None else finish(envelope)

    return dispatch


def _async_dispatch(body: Handler, name: str, finish: Callable[[Envelope], Envelope]) -> Dispatch:
    async def dispatch(inputs: dict, context: ToolContext) -> Envelope:
        try:
            pending = body(inputs, context)
        except HintException as exc:
            return finish(exc.hint)
        except Exception as exc:  # noqa: BLE001 - becomes a typed Err; the traceback goes to the log
            return finish(_failed(name, exc))
        return await _settle(pending, name, finish)

    return dispatch


async def _settle(pending: Any, name: str, finish: Callable[[Envelope], Envelope]) -> Envelope:
    try:
        envelope = coerce_return(await pending)
    except HintException as exc:
        envelope = exc.hint
    except Exception as exc:  # noqa: BLE001 - becomes a typed Err; the traceback goes to the log
        envelope = _failed(name, exc)
    return finish(envelope)


def _failed(name: str, exc: Exception) -> Err:
    # The model reads only the class name and message; developers get the traceback here.
    logger.error("tool %r raised %s", name, type(exc).__name__, exc_info=exc)
    return err_from_exception(exc)


def _notify(observer: Observer, name: str, envelope: Envelope) -> None:
    try:
        observer(name, envelope)
    except Exception:  # noqa: BLE001 - telemetry must never fail the tool call it observes
        logger.exception("contract observer failed for tool %r", name)

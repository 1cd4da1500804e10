"""Effects: what a turn does to the outside world, as data.

A turn produces typed effects from a closed catalog of three kinds. Each is
applied the moment it is produced through ``apply_effect`` — the only code
that writes telemetry, streams to the display or persists a message — and is
also appended to the turn's effect list, which is stored so the turn can be
replayed byte for byte.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PersistAssistantMessage:
    message_id: str
    conversation_id: str
    tenant_id: str
    final_text: str
    structured_content: list = field(default_factory=list)
    cards: list = field(default_factory=list)
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class TelemetryEvent:
    event_type: str
    data: dict
    blob: bytes | None = None


@dataclass(frozen=True, slots=True)
class StreamChunks:
    """Chunks sent to the live display; one batched effect per turn in the record."""

    chunks: list


Effect = PersistAssistantMessage | TelemetryEvent | StreamChunks

# The closed catalog. A new kind needs a new branch in apply_effect and in
# effect_to_dict / effect_from_dict; tests/test_effects.py fails until it has them.
EFFECT_KINDS: tuple[type, ...] = (PersistAssistantMessage, TelemetryEvent, StreamChunks)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {kind: tuple(f.name for f in fields(kind)) for kind in EFFECT_KINDS}


class Recorder(Protocol):
    def record(self, event_type: str, data: dict, blob: bytes | None = None) -> None: ...


class Display(Protocol):
    def send(self, chunk: dict) -> None: ...


@dataclass
class EffectContext:
    recorder: Recorder
    display: Display | None = None
    persister: Callable[[PersistAssistantMessage], None] | None = None


def apply_effect(effect: Effect, ctx: EffectContext) -> None:
    """Carry one effect out. Raises TypeError for anything outside the catalog."""
    if isinstance(effect, TelemetryEvent):
        ctx.recorder.record(effect.event_type, effect.data, effect.blob)
    elif isinstance(effect, StreamChunks):
        if ctx.display is not None:
            for chunk in effect.chunks:
                ctx.display.send(chunk)
    elif isinstance(effect, PersistAssistantMessage):
        if ctx.persister is not None:
            ctx.persister(effect)
    else:
        raise TypeError(f"{type(effect).__name__} is not in the effect catalog")


def effect_to_dict(effect: Effect) -> dict[str, Any]:
    """A JSON-safe form of ``effect`` (blobs base64-encoded), for storing at once.

    It shares the effect's lists and dicts rather than copying them: the
    turn's record is encoded as soon as it is built, and ``asdict``'s deep
    copy of every event's data was a fifth of closing a turn.
    """
    if not isinstance(effect, EFFECT_KINDS):
        raise TypeError(f"{type(effect).__name__} is not in the effect catalog")
    if isinstance(effect, StreamChunks):
        return {"kind": "StreamChunks", "chunks": list(effect.chunks)}
    body = {"kind": type(effect).__name__}
    body.update((name, getattr(effect, name)) for name in _FIELD_NAMES[type(effect)])
    if isinstance(effect, TelemetryEvent) and effect.blob is not None:
        body["blob"] = base64.b64encode(effect.blob).decode()
    return body


def effect_from_dict(data: dict[str, Any]) -> Effect:
    """Inverse of ``effect_to_dict``. Raises ValueError for an unknown kind."""
    body = dict(data)
    kind = body.pop("kind")
    by_name = {cls.__name__: cls for cls in EFFECT_KINDS}
    if kind not in by_name:
        raise ValueError(f"unknown effect kind {kind!r}; the catalog is {sorted(by_name)}")
    if kind == "TelemetryEvent" and body.get("blob") is not None:
        body["blob"] = base64.b64decode(body["blob"])
    return by_name[kind](**body)


class EffectLog:
    """The turn's effects in order, applied as they are produced."""

    def __init__(self, ctx: EffectContext) -> None:
        self.ctx = ctx
        self.effects: list[Effect] = []
        self._chunks: list = []

    def emit(self, effect: Effect) -> None:
        self.effects.append(effect)
        apply_effect(effect, self.ctx)

    def stream(self, chunk: dict) -> None:
        """Send one chunk now; it joins the turn's single batched StreamChunks.

        What ``apply_effect(StreamChunks([chunk]))`` does, without building the
        one-chunk effect: this runs for every streamed chunk of every answer."""
        if self.ctx.display is not None:
            self.ctx.display.send(chunk)
        self._chunks.append(chunk)

    def streamed_text(self) -> str:
        """The answer text streamed to the display so far (what the user saw)."""
        return "".join(c.get("text", "") for c in self._chunks if c.get("type") == "text_delta")

    def close(self) -> list[Effect]:
        """The complete record: the batched chunks go last, as one effect."""
        if self._chunks:
            self.effects.append(StreamChunks(list(self._chunks)))
            self._chunks.clear()
        return self.effects


# What a delegated task's text and thinking are called, in its events and chunks: not the
# answer's (``text_delta``), so they never join the user's answer or its stored text.
SUBTASK_KINDS = MappingProxyType({"text_delta": "subtask_text", "thinking": "subtask_thinking"})


class SubtaskLog(EffectLog):
    """A delegated task's view of its turn's log: its effects go to the turn's, each event
    and chunk marked with the task's ``subtask`` id ("1", "2", "1.1" for a task's own
    task), its text and thinking under their own kinds (``SUBTASK_KINDS``)."""

    def __init__(self, turn_log: EffectLog, subtask: str) -> None:
        super().__init__(turn_log.ctx)
        self._turn_log = turn_log
        self.subtask = subtask

    def emit(self, effect: Effect) -> None:
        if isinstance(effect, TelemetryEvent):
            kind = SUBTASK_KINDS.get(effect.event_type, effect.event_type)
            # A task's own task marked it first: that (deeper) id stands.
            effect = TelemetryEvent(kind, {"subtask": self.subtask, **effect.data}, effect.blob)
        self._turn_log.emit(effect)

    def stream(self, chunk: dict) -> None:
        kind = SUBTASK_KINDS.get(chunk["type"], chunk["type"])
        self._turn_log.stream({"subtask": self.subtask, **chunk, "type": kind})

    def streamed_text(self) -> str:
        return ""  # a task's text is never the answer


class RecordingRecorder:
    """Stands in for the recorder inside the loop: every event becomes an effect."""

    def __init__(self, log: EffectLog) -> None:
        self._log = log

    def record(self, event_type: str, data: dict, blob: bytes | None = None) -> None:
        self._log.emit(TelemetryEvent(event_type, data, blob))


class RecordingDisplay:
    """Stands in for the display inside the loop: every chunk is streamed through the log."""

    def __init__(self, log: EffectLog) -> None:
        self._log = log

    def send(self, chunk: dict) -> None:
        self._log.stream(chunk)

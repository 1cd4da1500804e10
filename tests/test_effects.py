"""The closed effect catalog and the one chokepoint that applies effects."""

import typing

import pytest

from conversations.effects import (
    EFFECT_KINDS,
    Effect,
    EffectContext,
    EffectLog,
    PersistAssistantMessage,
    RecordingDisplay,
    RecordingRecorder,
    StreamChunks,
    TelemetryEvent,
    apply_effect,
    effect_from_dict,
    effect_to_dict,
)
from conversations.recording import ListDisplay

# Updating this list is the deliberate act that admits a new effect kind.
CATALOG = ["PersistAssistantMessage", "TelemetryEvent", "StreamChunks"]


class MemoryRecorder:
    def __init__(self):
        self.events = []

    def record(self, event_type, data, blob=None):
        self.events.append((event_type, data, blob))


def test_the_catalog_has_exactly_three_kinds():
    assert [cls.__name__ for cls in EFFECT_KINDS] == CATALOG
    assert set(typing.get_args(Effect)) == set(EFFECT_KINDS), "Effect and EFFECT_KINDS disagree"


@pytest.mark.parametrize(
    "effect",
    [
        PersistAssistantMessage("m1", "c1", "acme", "hi", [{"type": "text"}], [], 0.5),
        TelemetryEvent("tool_call", {"name": "plan"}, b"\x00\x01"),
        StreamChunks([{"type": "text_delta", "text": "he"}, {"type": "text_delta", "text": "llo"}]),
    ],
    ids=CATALOG,
)
def test_every_kind_round_trips_through_its_stored_form(effect):
    assert effect_from_dict(effect_to_dict(effect)) == effect


def test_something_outside_the_catalog_is_refused_everywhere():
    class SendEmail:  # a would-be fourth kind
        pass

    with pytest.raises(TypeError, match="not in the effect catalog"):
        apply_effect(SendEmail(), EffectContext(recorder=MemoryRecorder()))
    with pytest.raises(TypeError, match="not in the effect catalog"):
        effect_to_dict(SendEmail())
    with pytest.raises(ValueError, match="unknown effect kind 'SendEmail'"):
        effect_from_dict({"kind": "SendEmail"})


def test_recorded_events_reach_the_real_recorder_at_once_and_the_log_in_order():
    recorder = MemoryRecorder()
    log = EffectLog(EffectContext(recorder=recorder))
    RecordingRecorder(log).record("status", {"text": "thinking"})
    assert recorder.events == [("status", {"text": "thinking"}, None)]  # applied on emission
    RecordingRecorder(log).record("done", {})
    assert [e.event_type for e in log.close()] == ["status", "done"]


def test_chunks_are_displayed_live_and_recorded_as_one_batch():
    display = ListDisplay()
    log = EffectLog(EffectContext(recorder=MemoryRecorder(), display=display))
    for text in ("a", "b", "c"):
        RecordingDisplay(log).send({"type": "text_delta", "text": text})
    assert [c["text"] for c in display.chunks] == ["a", "b", "c"]
    assert log.close() == [StreamChunks([{"type": "text_delta", "text": t} for t in "abc"])]


def test_a_persist_effect_goes_to_the_persister():
    persisted = []
    effect = PersistAssistantMessage("m1", "c1", "acme", "done")
    apply_effect(effect, EffectContext(recorder=MemoryRecorder(), persister=persisted.append))
    assert persisted == [effect]

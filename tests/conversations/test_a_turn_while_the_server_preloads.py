"""A chat turn that arrives while the server still preloads is answered in full, not failed."""

import gc
import threading

import pytest

from eunice import preload
from tests.conversations.test_websocket import ANSWER, CALL, answer_text, ask_over_a_socket

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_with_a_tool_call_during_the_preload_is_answered(model, weather_tool, conversation, user):
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    entered, gate = threading.Event(), threading.Event()

    def held_step() -> None:
        entered.set()
        assert gate.wait(60)

    model([CALL, ANSWER])
    preload.start([held_step, *preload.STEPS[:2]])  # then the system tools' modules and the SDK's set-up
    try:
        assert entered.wait(30)
        chunks = ask_over_a_socket(conversation, user, "Weather in Oslo?")
        assert preload.running()
    finally:
        gate.set()
        assert preload.wait(120)
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if frozen:
            gc.freeze()

    assert [c for c in chunks if c["type"] == "error"] == []
    assert answer_text(chunks) == "It is 14°C."
    assert chunks[-1]["type"] == "done"

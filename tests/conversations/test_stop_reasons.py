"""A model call that stops short (cut off, paused, refused) is handled as what it is, never shown as complete."""

import json

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent
from conversations.recording import ListDisplay
from conversations.stops import CUT_NOTICE, MAX_CONTINUATIONS, REFUSAL_NOTICE
from registry.models import ToolExecutionLog

pytestmark = pytest.mark.django_db(transaction=True)


def run(conversation, user, text, display=None):
    return async_to_sync(run_turn)(conversation, text=text, user=user, display=display)


def cut(text):
    return {"text": [text], "stop_reason": "max_tokens"}


def test_an_answer_cut_at_max_tokens_is_continued_and_stored_whole(model, conversation, user):
    server = model([cut("The first half, "), {"text": ["and the rest."], "expect": {"user_text_contains": "cut off"}}])
    display = ListDisplay()

    outcome = run(conversation, user, "Tell me everything.", display)

    assert (outcome.text, outcome.stop_reason, outcome.model_calls) == ("The first half, and the rest.", "end_turn", 2)
    assert ChatMessage.objects.get(role="assistant").text == "The first half, and the rest."
    continued = server.requests[1].messages
    assert continued[-2] == {"role": "assistant", "content": [{"type": "text", "text": "The first half, "}]}
    assert display.chunks[-1]["stop_reason"] == "end_turn"


def test_an_answer_still_cut_after_its_continuations_says_so_visibly(model, conversation, user):
    model([cut(f"part {n} ") for n in range(MAX_CONTINUATIONS + 1)])
    display = ListDisplay()

    outcome = run(conversation, user, "Tell me everything.", display)

    assert outcome.stop_reason == "max_tokens"
    assert outcome.text.endswith(CUT_NOTICE)
    assert outcome.text.startswith("part 0 part 1 ")
    assert display.chunks[-1] == {**display.chunks[-1], "type": "done", "stop_reason": "max_tokens"}
    assert display.chunks[-1]["notice"] == "The answer was cut off: it reached the model's output limit."
    stored = ChatMessage.objects.get(role="assistant")
    assert stored.text.endswith(CUT_NOTICE)
    assert CUT_NOTICE not in json.dumps(stored.structured_content), "the model is never fed our notice as its words"


def test_the_rest_api_reports_a_cut_answer_as_cut(model, conversation, user):
    model([cut(f"part {n} ") for n in range(MAX_CONTINUATIONS + 1)])
    api = APIClient()
    api.force_authenticate(user)
    reply = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "go"}, format="json")
    assert reply.status_code == 201, reply.content
    assert reply.json()["stop_reason"] == "max_tokens"
    assert reply.json()["message"]["text"].endswith(CUT_NOTICE)


def test_a_tool_call_cut_mid_json_is_not_run_and_the_model_is_told(model, weather_tool, conversation, user):
    long_city = "Llanfairpwllgwyngyll" * 20
    server = model(
        [
            {"text": ["Checking."], "tool_uses": [{"name": "weather", "input": {"city": long_city}, "cut": True}]},
            {"text": ["I will ask for less."], "expect": {"user_text_contains": "`weather` was cut off"}},
        ]
    )

    outcome = run(conversation, user, "Weather?")

    assert (outcome.text, outcome.stop_reason) == ("I will ask for less.", "end_turn")
    assert not ToolExecutionLog.objects.filter(tool_name="weather").exists()
    retried = server.requests[1].messages
    assert retried[-2] == {"role": "assistant", "content": [{"type": "text", "text": "Checking."}]}
    assert {"cut_tool_uses": ["weather"]} in [e.data for e in ConversationEvent.objects.filter(event_type="status")]


def test_a_paused_turn_is_sent_back_as_it_is_and_goes_on(model, conversation, user):
    server = model(
        [
            {"text": ["Searching the archive… "], "stop_reason": "pause_turn"},
            {"text": ["found it."], "expect": {"last_role": "assistant"}},
        ]
    )

    outcome = run(conversation, user, "Find the memo.")

    assert (outcome.text, outcome.stop_reason, outcome.model_calls) == (
        "Searching the archive… found it.",
        "end_turn",
        2,
    )
    resent = server.requests[1].messages
    assert resent[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Searching the archive…"}]}
    assert resent[-2]["content"][-1]["text"].startswith("[CURRENT_STATE]")


def test_a_refusal_is_shown_as_one_and_the_refused_reply_is_not_sent_back(model, conversation, user):
    server = model([{"text": ["I can help with th"], "stop_reason": "refusal"}, {"text": ["Hello again."]}])
    display = ListDisplay()

    outcome = run(conversation, user, "Something refused.", display)

    assert outcome.stop_reason == "refusal"
    assert outcome.text == f"I can help with th\n\n{REFUSAL_NOTICE}"
    assert display.chunks[-1]["stop_reason"] == "refusal"
    assert run(conversation, user, "Something else.").text == "Hello again."
    assert "I can help with th" not in json.dumps(server.requests[1].messages)


def test_the_websocket_done_event_says_an_answer_was_cut(model, conversation, user):
    from tests.conversations.test_websocket import ask_over_a_socket

    model([cut(f"part {n} ") for n in range(MAX_CONTINUATIONS + 1)])

    done = ask_over_a_socket(conversation, user, "Tell me everything.")[-1]

    assert (done["type"], done["stop_reason"]) == ("done", "max_tokens")
    assert done["notice"] == "The answer was cut off: it reached the model's output limit."

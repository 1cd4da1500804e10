"""A stream error, a cancel or a killed server ends a turn early, and keeps what happened:
the tool calls that ran (their effects persist) and the words the user saw, in the model's
own words; the error or the cancel is an event, never something the model is made to say.

Through the real anthropic SDK against the scripted Messages API server (which refuses a
history that breaks the API's rules), over REST and the websocket.
"""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent
from conversations.replay import replay
from tests.conversations.test_turn_lifecycle import DisplayThatBreaks, api, killed_turn, post
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["api"]  # a fixture

OVERLOADED = {"status": 529, "type": "overloaded_error", "message": "Overloaded"}
CALL_WEATHER = {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "toolu_w1"}]}


def said(message) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def kinds_of(message) -> list[str]:
    return [b["type"] for b in message["content"]]


def test_a_stream_error_mid_answer_keeps_the_tool_call_and_the_words_the_user_saw(
    api, model, weather_tool, conversation
):
    server = model(
        [
            CALL_WEATHER,
            {"text": ["It is ", "raining in "], "stream_error": OVERLOADED},
            {"text": ["Yes, still raining."]},
        ]
    )

    first = post(api, conversation, "Weather in Oslo?")

    assert first.status_code == 201, first.content
    assert first.json()["stop_reason"] == "error" and "overloaded" in first.json()["error"]
    # The answer is what the user saw streaming: the model's words, with nothing of ours added.
    assert first.json()["message"]["text"] == "It is raining in "
    errors = ConversationEvent.objects.filter(conversation=conversation, turn=1, event_type="error")
    assert [e.data["kind"] for e in errors] == ["overloaded"]

    second = post(api, conversation, "Still?")

    assert second.status_code == 201, second.content
    sent = server.requests[2].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert kinds_of(sent[1]) == ["tool_use"] and kinds_of(sent[2]) == ["tool_result"]
    assert "light rain" in sent[2]["content"][0]["content"]
    assert said(sent[3]) == "It is raining in "
    assert all("could not answer" not in said(m) and "Overloaded" not in said(m) for m in sent)
    assert replay(conversation).identical


def test_a_cancel_mid_stream_keeps_the_streamed_words_and_puts_no_note_in_the_models_mouth(model, conversation, user):
    server = model([{"text": ["Thinking ", "it ", "over…"], "pause_after": 4}, {"text": ["Here."]}])

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "first"})
        assert (await ws.receive_json_from(timeout=10))["type"] == "text_delta"
        await ws.send_json_to({"type": "cancel"})
        first = await receive_until_done(ws)
        server.resume()
        await ws.send_json_to({"type": "message", "text": "second"})
        second = await receive_until_done(ws)
        await ws.disconnect()
        return first, second

    first, second = async_to_sync(chat)()

    assert first[-1]["type"] == "done" and first[-1]["cancelled"]
    answer = ChatMessage.objects.filter(conversation=conversation, role="assistant").first()
    assert answer.text == "Thinking "
    assert "Cancelled" not in answer.text
    events = ConversationEvent.objects.filter(conversation=conversation, turn=1, event_type="status")
    assert {"cancelled": "by the user"} in [e.data for e in events]
    sent = server.requests[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert said(sent[1]) == "Thinking "
    assert all("Cancelled" not in said(m) for m in sent)


def test_a_turn_that_raises_after_a_tool_call_keeps_the_call_in_the_next_request(
    model, weather_tool, conversation, user
):
    server = model([CALL_WEATHER, {"text": ["Half ", "an answer"]}, {"text": ["All of it."]}])

    with pytest.raises(RuntimeError, match="the relay broke"):
        async_to_sync(run_turn)(conversation, text="Weather?", user=user, display=DisplayThatBreaks())
    assert async_to_sync(run_turn)(conversation, text="again", user=user).text == "All of it."

    sent = server.requests[2].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert kinds_of(sent[1]) == ["tool_use"] and kinds_of(sent[2]) == ["tool_result"]
    assert said(sent[3]) == "Half "
    assert replay(conversation).identical


def test_the_first_request_after_a_killed_turn_carries_its_partial_answer(model, conversation, api):
    killed_turn(conversation, "plan my trip", [("text_delta", {"text": "Let me look at trains."})])
    server = model([{"text": ["Trains leave hourly."]}])

    assert post(api, conversation, "are you there?").status_code == 201

    sent = server.requests[0].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert said(sent[1]) == "Let me look at trains."
    assert said(sent[2]).startswith("are you there?")

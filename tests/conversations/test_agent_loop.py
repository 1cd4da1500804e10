"""The agentic loop against a scripted Messages API server, through the real SDK."""

import json
import re
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent, UsageLog
from conversations.prompt import CHARS_PER_TOKEN
from conversations.recording import ListDisplay
from conversations.replay import replay
from conversations.state import request_cancel
from tests.conversations.conftest import TEST_KEY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _results_pass_the_result_budget(settings):
    """These tests are about the context window; a large result would otherwise be held as
    a handle by the result budget (tests/conversations/test_result_budget.py)."""
    settings.RESULT_BUDGET_TOKENS = 10_000_000


CALL_WEATHER = {
    "tool_uses": [{"name": "weather", "input": {"city": "Oslo", "reasoning": "the user asked"}, "id": "toolu_1"}],
    "usage": {"input_tokens": 1000, "output_tokens": 50},
}
ANSWER = {
    "text": ["It is 14°C ", "and raining ", "in Oslo."],
    "usage": {"input_tokens": 1200, "output_tokens": 20},
    "expect": {"tool_result_contains": "Oslo: 14°C, light rain"},
}


def run(conversation, user, text, display=None, **kwargs):
    return async_to_sync(run_turn)(conversation, text=text, user=user, display=display, **kwargs)


def test_the_model_calls_a_tool_gets_the_result_and_answers(model, weather_tool, conversation, user):
    server = model([CALL_WEATHER, ANSWER])
    display = ListDisplay()
    outcome = run(conversation, user, "What's the weather in Oslo?", display)
    assert outcome.text == "It is 14°C and raining in Oslo."
    assert (outcome.stop_reason, outcome.model_calls) == ("end_turn", 2)
    assert "weather" in [tool["name"] for tool in server.requests[0].tools]
    reply = ChatMessage.objects.get(conversation=conversation, role="assistant")
    assert reply.text == "It is 14°C and raining in Oslo."


def test_events_are_recorded_in_order(model, weather_tool, conversation, user):
    model([CALL_WEATHER, ANSWER])
    run(conversation, user, "What's the weather in Oslo?")
    kinds = list(ConversationEvent.objects.filter(conversation=conversation).values_list("event_type", flat=True))
    assert kinds == [
        "user_message",
        "llm_request",
        "decision",
        "tool_call",
        "contract_envelope",
        "tool_result",
        "text_delta",
        "llm_request",
        "done",
    ]


def test_text_streams_to_the_display_in_order_and_tool_progress_is_shown(model, weather_tool, conversation, user):
    model([CALL_WEATHER, ANSWER])
    display = ListDisplay()
    run(conversation, user, "weather?", display)
    kinds = [chunk["type"] for chunk in display.chunks]
    assert kinds == ["tool_call", "tool_result", "text_delta", "text_delta", "text_delta", "done"]
    assert display.chunks[0]["status_message"] == display.chunks[1]["status_message"] == "Checking the weather"
    assert "".join(c["text"] for c in display.chunks if c["type"] == "text_delta") == "It is 14°C and raining in Oslo."


def test_a_tools_progress_and_cards_stream_to_the_display_around_its_result(model, make_tool, conversation, user):
    from conversations.models import WorkingSetEntry
    from registry.result import ToolResult

    def survey(inputs, context):
        context.progress("counting rivers", 0.5)
        context.progress("done counting", 7)  # a fraction past 1 is clamped
        return ToolResult(content="12 rivers", cards=[{"type": "table", "rows": [{"river": "Rhône"}]}])

    make_tool("survey", survey)
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="survey")
    model([{"tool_uses": [{"name": "survey", "input": {}, "id": "t1"}]}, {"text": ["Twelve."]}])
    display = ListDisplay()

    run(conversation, user, "How many rivers?", display)

    shown = [{k: v for k, v in c.items() if k != "ts"} for c in display.chunks if c["type"] in ("progress", "card")]
    assert [c["type"] for c in display.chunks] == [
        "tool_call",
        "progress",
        "progress",
        "tool_result",
        "card",
        "text_delta",
        "done",
    ]
    assert shown == [
        {"type": "progress", "tool_use_id": "t1", "name": "survey", "message": "counting rivers", "fraction": 0.5},
        {"type": "progress", "tool_use_id": "t1", "name": "survey", "message": "done counting", "fraction": 1.0},
        {
            "type": "card",
            "tool_use_id": "t1",
            "source_tool": "survey",
            "card": {"type": "table", "rows": [{"river": "Rhône"}]},
        },
    ]


def test_thinking_is_kept_apart_from_the_answer(model, conversation, user):
    model([{"thinking": ["Let me think."], "text": ["Hello."]}])
    display = ListDisplay()
    run(conversation, user, "hi", display)
    assert [c["type"] for c in display.chunks[:2]] == ["thinking", "text_delta"]
    assert ConversationEvent.objects.get(event_type="thinking").data == {"text": "Let me think."}


def test_each_model_call_is_costed_from_the_model_config(model, weather_tool, conversation, user):
    model([CALL_WEATHER, ANSWER])
    run(conversation, user, "weather?")
    costs = list(
        UsageLog.objects.filter(kind="llm").order_by("id").values_list("input_tokens", "output_tokens", "cost_usd")
    )
    assert costs == [(1000, 50, pytest.approx(0.00375)), (1200, 20, pytest.approx(0.0039))]
    assert ChatMessage.objects.get(role="assistant").cost_usd == pytest.approx(0.00765)


def test_the_state_block_trails_the_request_after_the_cache_breakpoint(model, conversation, user):
    server = model([{"text": ["ok"]}])
    run(conversation, user, "hello there")
    last = server.requests[0].messages[-1]["content"]
    assert last[-1]["text"].startswith("[CURRENT_STATE]")
    assert last[-2]["text"] == "hello there" and last[-2]["cache_control"] == {"type": "ephemeral"}


def test_the_next_message_carries_the_earlier_tool_calls(model, weather_tool, conversation, user):
    server = model([CALL_WEATHER, ANSWER, {"text": ["Still raining."]}])
    run(conversation, user, "weather?")
    run(conversation, user, "and now?")
    history = server.requests[2].messages
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant", "user"]
    assert history[1]["content"][0]["type"] == "tool_use"
    assert history[2]["content"][0]["type"] == "tool_result"


def test_the_loop_stops_at_its_model_call_cap(model, weather_tool, conversation, user, settings):
    settings.EUNICE_MAX_MODEL_CALLS = 2
    model(
        [
            {"tool_uses": [{"name": "weather", "input": {"city": "A"}, "id": "t1"}]},
            {"tool_uses": [{"name": "weather", "input": {"city": "B"}, "id": "t2"}]},
        ]
    )
    outcome = run(conversation, user, "loop")
    assert outcome.stop_reason == "max_model_calls"
    assert outcome.text.endswith("(Stopped after 2 model calls.)")


def request_chars(recorded) -> int:
    """A recorded request's size as the estimator measures it: system prompt, tools, messages."""
    body = recorded.body
    return sum(len(json.dumps(body.get(key, []), ensure_ascii=False)) for key in ("system", "tools", "messages"))


def weather_calls(n, input_tokens):
    return [
        {
            "tool_uses": [{"name": "weather", "input": {"city": f"City {i}"}, "id": f"toolu_{i}"}],
            "usage": {"input_tokens": input_tokens},
        }
        for i in range(n)
    ]


def test_a_long_tool_calling_turn_is_not_cut_short_by_its_token_estimate(
    model, weather_tool, conversation, user, settings
):
    # The model counts the system prompt and every tool definition as input; the estimate must too.
    # Calibrated against the messages alone, it shrank its chars-per-token call after call, and a
    # conversation a third of the window long looked full after a few calls.
    probe = model([{"text": ["Hello."]}])
    run(conversation, user, "hi")
    tokens = request_chars(probe.requests[0]) // 4
    settings.EUNICE_CONTEXT_TOKENS = tokens * 3
    model(weather_calls(8, tokens) + [{"text": ["Rain everywhere."], "usage": {"input_tokens": tokens}}])

    outcome = run(conversation, user, "Weather in eight cities?")

    assert (outcome.stop_reason, outcome.model_calls) == ("end_turn", 9)
    assert not ConversationEvent.objects.filter(event_type="status").exists()


def big_result_tool(make_tool, conversation, size):
    from conversations.models import WorkingSetEntry

    make_tool("dump", lambda inputs, context: "x" * size, input_schema={"type": "object", "properties": {}})
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="dump")


def test_an_oversized_tool_result_the_model_has_read_is_compacted(
    model, weather_tool, make_tool, conversation, user, settings
):
    big_result_tool(make_tool, conversation, 60_000)
    probe = model([{"text": ["Hello."]}])
    run(conversation, user, "hi")
    base = request_chars(probe.requests[0])
    # One request with the whole result passes the soft threshold but not the hard one.
    settings.EUNICE_CONTEXT_TOKENS = int((base + 60_000) / CHARS_PER_TOKEN / 0.9)
    server = model(
        [
            {"tool_uses": [{"name": "dump", "input": {}, "id": "t1"}]},
            {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "t2"}]},
            {"text": ["Done."]},
        ]
    )

    outcome = run(conversation, user, "dump it, then the weather")

    assert outcome.stop_reason == "end_turn"
    sent_second = json.dumps(server.requests[1].messages)
    sent_third = json.dumps(server.requests[2].messages)
    assert "x" * 60_000 in sent_second, "a result the model has not read yet is sent whole"
    assert "x" * 60_000 not in sent_third
    assert re.search(
        r"\[compacted: [\d,]+ more characters; the full result is in this conversation's events\]", sent_third
    )
    statuses = [e.data for e in ConversationEvent.objects.filter(event_type="status").order_by("sequence")]
    assert {"compacted_tool_results": 1} in statuses


def test_a_turn_that_cannot_fit_even_compacted_stops_cleanly(model, make_tool, conversation, user, settings):
    big_result_tool(make_tool, conversation, 60_000)
    probe = model([{"text": ["Hello."]}])
    run(conversation, user, "hi")
    base = request_chars(probe.requests[0])
    settings.EUNICE_CONTEXT_TOKENS = int(
        (base + 40_000) / CHARS_PER_TOKEN
    )  # the first request fits; with the result, never
    server = model([{"tool_uses": [{"name": "dump", "input": {}, "id": "t1"}]}])

    outcome = run(conversation, user, "dump it")

    assert (outcome.stop_reason, outcome.model_calls) == ("context_full", 1)
    assert "please start a new one" in outcome.text
    assert len(server.requests) == 1


def test_agentic_mode_reminds_the_model_of_an_unfinished_plan_once(model, conversation, user):
    conversation.mode = "agentic"
    conversation.plan = {"steps": [{"title": "Draft", "status": "done"}, {"title": "Review", "status": "pending"}]}
    conversation.save()
    model(
        [{"text": ["Done!"]}, {"text": ["Reviewed too."], "expect": {"user_text_contains": "1 open step(s): Review"}}]
    )
    outcome = run(conversation, user, "finish")
    assert outcome.text == "Reviewed too."
    assert ConversationEvent.objects.filter(event_type="correction").count() == 1


def test_a_cancel_mid_stream_stops_the_answer_at_once(model, conversation, user):
    model([{"text": [f"word{n} " for n in range(200)], "delay": 0.05}])
    display = ListDisplay()
    marks = {}

    def cancel_when_streaming():
        deadline = time.monotonic() + 10
        while not any(c["type"] == "text_delta" for c in display.chunks) and time.monotonic() < deadline:
            time.sleep(0.01)
        marks["cancelled_at"] = time.monotonic()
        from django.db import connection

        try:
            request_cancel(conversation)
        finally:
            connection.close()

    threading.Thread(target=cancel_when_streaming).start()
    outcome = run(conversation, user, "talk a lot", display)
    latency = time.monotonic() - marks["cancelled_at"]
    assert outcome.cancelled and outcome.text.startswith("word0") and "Cancelled" not in outcome.text
    # the answer would stream 10 s more; generous for a loaded machine (bench/cancel.py measures it)
    assert latency < 1.0, f"stopped {latency * 1000:.0f} ms after the cancel"


def test_the_conversation_is_usable_after_a_cancel(model, conversation, user):
    from conversations.state import clear_cancel

    model([{"text": ["Hi again."]}])
    request_cancel(conversation)
    clear_cancel(conversation)
    assert run(conversation, user, "hello").text == "Hi again."


def test_lowering_a_flag_that_is_down_writes_nothing(conversation, django_assert_num_queries):
    from conversations.models import Conversation
    from conversations.state import clear_cancel

    with django_assert_num_queries(0):
        clear_cancel(conversation)
    request_cancel(conversation)
    with django_assert_num_queries(1):
        clear_cancel(conversation)
    assert Conversation.objects.get(pk=conversation.pk).cancel_requested_at is None


def test_a_cancel_flagged_by_another_process_stops_the_turn_before_its_next_model_call(
    model, make_tool, conversation, user
):
    from django.utils import timezone

    from conversations.models import Conversation, WorkingSetEntry

    def flag_from_elsewhere(inputs, context):  # the flag only, as another server process would set it
        Conversation.objects.filter(pk=conversation.pk).update(cancel_requested_at=timezone.now())
        return {"ok": True}

    make_tool(
        "weather", flag_from_elsewhere, input_schema={"type": "object", "properties": {"city": {"type": "string"}}}
    )
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="weather")  # offered to the model
    server = model([CALL_WEATHER, ANSWER])
    outcome = run(conversation, user, "weather?")
    assert outcome.cancelled and outcome.stop_reason == "cancelled"
    assert len(server.requests) == 1


def test_a_model_error_is_reported_without_the_key(model, conversation, user):
    model([{"error": {"status": 401, "type": "authentication_error", "message": "invalid x-api-key " + TEST_KEY}}])
    display = ListDisplay()
    outcome = run(conversation, user, "hi", display)
    assert outcome.stop_reason == "error"
    assert TEST_KEY not in outcome.text and "Traceback" not in outcome.text
    assert any(c["type"] == "error" for c in display.chunks)


def test_a_looped_conversation_replays_byte_for_byte(model, weather_tool, conversation, user):
    model([CALL_WEATHER, ANSWER, {"text": ["Bye."]}])
    run(conversation, user, "weather?")
    run(conversation, user, "thanks")
    report = replay(conversation)
    assert report.identical, report.first_difference
    assert report.turns == 2


def test_offline_mode_explains_itself_and_runs_slash_commands(conversation, user):
    outcome = run(conversation, user, "hello")
    assert "no language model is configured" in outcome.text.lower()
    outcome = run(conversation, user, '/search_tools {"query": "plan the steps"}')
    assert "plan" in outcome.text
    assert ConversationEvent.objects.filter(event_type="tool_call").exists()

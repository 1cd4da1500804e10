"""A delegated task (a helper) is its own: its text streams to a labelled pane of its own and
is stored under its own kinds, never as the answer; it pages tools into its own working set,
keeps no plan of its delegator's, and spends from its own budget, checked before each call.

Through the real anthropic SDK against the scripted Messages API server, over the websocket
and in the loop.
"""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent, WorkingSetEntry
from conversations.replay import replay
from llm import CURRENT_STATE_MARKER
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

pytestmark = pytest.mark.django_db(transaction=True)


def offer(conversation, *names):
    for name in names:
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)


def state_block(request) -> str:
    """The [CURRENT_STATE] block a request ends with."""
    last = request.messages[-1]["content"][-1]
    assert last["type"] == "text" and last["text"].startswith(CURRENT_STATE_MARKER)
    return last["text"]


def test_helpers_stream_to_their_own_panes_and_never_into_the_answer(model, conversation, user):
    offer(conversation, "delegate_batch")
    model(
        [
            {"tool_uses": [{"name": "delegate_batch", "input": {"tasks": ["one", "two"]}, "id": "t1"}]},
            {"text": ["CHILD-A ", "streams ", "on."]},
            {"text": ["CHILD-B ", "streams ", "too."]},
            {"text": ["Both ", "done."], "expect": {"tool_result_contains": "## Task 2: two"}},
        ]
    )

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "do both"})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return chunks

    chunks = async_to_sync(chat)()

    assert "".join(c["text"] for c in chunks if c["type"] == "text_delta") == "Both done."
    started = {c["subtask"]: c["task"] for c in chunks if c["type"] == "subtask_started"}
    assert started == {"1": "one", "2": "two"}
    panes = {
        id: "".join(c["text"] for c in chunks if c["type"] == "subtask_text" and c["subtask"] == id) for id in started
    }
    assert sorted(panes.values()) == ["CHILD-A streams on.", "CHILD-B streams too."]
    finished = {c["subtask"]: c["stop_reason"] for c in chunks if c["type"] == "subtask_finished"}
    assert finished == {"1": "end_turn", "2": "end_turn"}

    assert ChatMessage.objects.get(conversation=conversation, role="assistant").text == "Both done."
    events = ConversationEvent.objects.filter(conversation=conversation)
    assert [e.data["text"] for e in events.filter(event_type="text_delta")] == ["Both done."]
    assert sorted(e.data["subtask"] for e in events.filter(event_type="subtask_text")) == ["1", "2"]
    assert replay(conversation).identical


def test_a_helper_pages_tools_into_its_own_working_set_and_sees_no_plan_of_the_parents(
    model, make_tool, conversation, user
):
    make_tool("tide_tables", lambda inputs, context: "high tide at 06:12", description="Tide tables for a harbour.")
    offer(conversation, "delegate")
    conversation.plan = {"steps": [{"title": "Ask the harbour master", "status": "pending"}]}
    conversation.save()
    server = model(
        [
            {"tool_uses": [{"name": "delegate", "input": {"task": "When is high tide?"}, "id": "t1"}]},
            {"tool_uses": [{"name": "search_tools", "input": {"query": "tide tables harbour"}, "id": "h1"}]},
            {"tool_uses": [{"name": "tide_tables", "input": {}, "id": "h2"}]},
            {"text": ["06:12."], "expect": {"tool_result_contains": "high tide"}},
            {"text": ["High tide is at 06:12."], "expect": {"tool_result_contains": "06:12."}},
        ]
    )

    assert async_to_sync(run_turn)(conversation, text="Tide?", user=user).text == "High tide is at 06:12."

    parent, helper = server.requests[0], server.requests[1:4]
    assert "tide_tables" in [t["name"] for t in helper[1].tools]  # the helper's own paging works
    assert "tide_tables" not in [t["name"] for t in server.requests[4].tools]  # …and stayed its own
    assert list(WorkingSetEntry.objects.filter(conversation=conversation).values_list("namespace_id", "tool_name")) == [
        ("", "delegate")
    ]
    assert "Ask the harbour master" in state_block(parent)
    assert all("Ask the harbour master" not in state_block(r) for r in helper)


def test_each_helper_sees_and_is_held_to_its_own_budget_before_each_call(model, weather_tool, conversation, user):
    offer(conversation, "delegate")
    costly = {"input_tokens": 1000, "output_tokens": 100}  # $0.0045 at $3 / $15 per million
    server = model(
        [
            {
                "tool_uses": [{"name": "delegate", "input": {"task": "A", "max_cost_usd": 0.05}, "id": "t1"}],
                "usage": costly,
            },
            {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "a1"}], "usage": costly},
            {"text": ["A: rain."], "usage": costly},
            {
                "tool_uses": [{"name": "delegate", "input": {"task": "B", "max_cost_usd": 0.001}, "id": "t2"}],
                "usage": costly,
            },
            {
                "text": ["A found rain; B could not start."],
                "expect": {"tool_result_contains": "stopped early (budget)"},
            },
        ]
    )

    outcome = async_to_sync(run_turn)(conversation, text="go", user=user)

    assert outcome.text == "A found rain; B could not start."
    helper_a = server.requests[1:3]
    assert "spent: $0.0000 of 0.0500" in state_block(helper_a[0])
    assert "spent: $0.0045 of 0.0500" in state_block(helper_a[1])  # its own spending, not its parent's
    # B's first call would cost more than its $0.001: it is never made.
    assert len(server.requests) == 5
    assert "budget of $0.0010" in server.requests[4].messages[-1]["content"][0]["content"]
    stop = ConversationEvent.objects.get(conversation=conversation, event_type="status", data__stopped="budget")
    assert stop.data["subtask"] == "2" and stop.data["spent_usd"] == 0 and stop.data["next_call_usd"] > 0.001


def test_a_helpers_failed_model_call_ends_the_helper_and_its_delegator_is_told_why(model, conversation, user):
    offer(conversation, "delegate")
    overloaded = {"status": 529, "type": "overloaded_error", "message": "Overloaded"}
    model(
        [
            {"tool_uses": [{"name": "delegate", "input": {"task": "Count the rivers."}, "id": "t1"}]},
            {"text": ["There are "], "stream_error": overloaded},
            {
                "text": ["The helper failed; I will count them myself."],
                "expect": {"tool_result_contains": "the model call failed"},
            },
        ]
    )

    outcome = async_to_sync(run_turn)(conversation, text="How many rivers?", user=user)

    assert outcome.text == "The helper failed; I will count them myself."
    finished = ConversationEvent.objects.get(conversation=conversation, event_type="subtask_finished")
    assert finished.data["stop_reason"] == "error" and finished.data["subtask"] == "1"
    error = ConversationEvent.objects.get(conversation=conversation, event_type="error")
    assert error.data["subtask"] == "1" and error.data["kind"] == "overloaded"

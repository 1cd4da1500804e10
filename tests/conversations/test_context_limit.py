"""The context window is kept ahead of, not found by refusal: the token ratio is carried across turns,
and a "prompt is too long" refusal is learnt from, compacted and retried once, never resent for ever."""

import json

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import Conversation, ConversationEvent, WorkingSetEntry
from llm.models import ModelConfig
from tests.conversations.test_agent_loop import request_chars

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _results_pass_the_result_budget(settings, monkeypatch):
    """These tests are about the context window; a large result would otherwise be held as
    a handle by the result budget, and replayed compacted on the next turn
    (tests/conversations/test_result_budget.py)."""
    from conversations import result_budget

    settings.RESULT_BUDGET_TOKENS = 10_000_000
    monkeypatch.setattr(result_budget, "REPLAY_KEEP_CHARS", 10_000_000)


RESULT_CHARS = 60_000
NO_LIMIT = 10**9
DUMP = {"tool_uses": [{"name": "dump", "input": {}}]}


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


@pytest.fixture
def dump_tool(make_tool, conversation):
    make_tool("dump", lambda inputs, context: "x" * RESULT_CHARS, input_schema={"type": "object", "properties": {}})
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="dump")


def statuses():
    return [e.data for e in ConversationEvent.objects.filter(event_type="status").order_by("turn", "sequence")]


def test_the_ratio_learnt_in_one_turn_compacts_the_next_before_it_is_sent(
    model, dump_tool, conversation, user, settings
):
    # JSON counts 2 characters per token here: a fresh guess of 4 would send the next turn as it is.
    server = model([DUMP, {"text": ["Dumped."]}, {"text": ["Done."]}], context_tokens=NO_LIMIT, chars_per_token=2.0)
    run(conversation, user, "dump it")
    window = int(request_chars(server.requests[-1]) / 2 * 0.95)  # the next turn, sent whole, is refused
    settings.EUNICE_CONTEXT_TOKENS = server.context_tokens = window

    outcome = run(conversation, user, "and now?")

    assert (outcome.text, outcome.stop_reason) == ("Done.", "end_turn")
    assert len(server.requests) == 3, "nothing was refused"
    assert "x" * RESULT_CHARS not in json.dumps(server.requests[2].messages)
    stored = Conversation.objects.get(pk=conversation.pk).context_calibration
    assert stored["claude-test"]["chars_per_token"] == pytest.approx(2.0, rel=0.02)


def test_a_prompt_too_long_refusal_is_compacted_and_retried_once(model, dump_tool, conversation, user, settings):
    server = model([DUMP, {"text": ["Dumped."]}, {"text": ["Done."]}], context_tokens=NO_LIMIT, chars_per_token=1.5)
    run(conversation, user, "dump it")
    # Another model: its ratio is not known yet, and the fresh guess is too hopeful for this JSON.
    ModelConfig.objects.filter(role="chat").update(model="claude-other")
    settings.EUNICE_CONTEXT_TOKENS = server.context_tokens = int(request_chars(server.requests[-1]) * 0.55)

    outcome = run(conversation, user, "and now?")

    assert (outcome.text, outcome.stop_reason) == ("Done.", "end_turn")
    refused, retried = server.requests[2:]
    assert "x" * RESULT_CHARS in json.dumps(refused.messages)
    assert "x" * RESULT_CHARS not in json.dumps(retried.messages)
    assert any("context_too_long" in status for status in statuses())
    stored = Conversation.objects.get(pk=conversation.pk).context_calibration
    assert stored["claude-other"]["chars_per_token"] == pytest.approx(1.5, rel=0.02)


def test_a_conversation_past_the_window_says_so_and_is_not_resent_for_ever(model, conversation, user, settings):
    probe = model([{"text": ["Hello."]}])
    run(conversation, user, "hi")
    huge = "y" * 30_000  # a message of the person's own: nothing to compact
    size = request_chars(probe.requests[0]) + len(huge)
    settings.EUNICE_CONTEXT_TOKENS = window = int(size * 0.6)
    server = model([{"text": ["never"]}], context_tokens=window, chars_per_token=1.5)

    first = run(conversation, user, huge)
    second = run(conversation, user, "and now?")

    assert (first.stop_reason, second.stop_reason) == ("context_full", "context_full")
    assert "please start a new one" in second.text
    assert len(server.requests) == 1, "the refused request was not sent again"
    assert server.turns_left == 1

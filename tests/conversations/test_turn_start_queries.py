"""A turn's start costs a fixed number of queries, however long the conversation has run:
its set-up and its first request read each thing once (bench/turn_start.py)."""

import pytest
from django.db import connection

from conversations.context import stored_estimator
from conversations.loop import _next_request, _open_turn, _record_call
from conversations.models import ConversationEvent
from conversations.prompt import TokenEstimator
from conversations.turns import finish_turn
from llm import LLMResponse, ToolUseBlock, Usage

pytestmark = pytest.mark.django_db

# begin_turn's transaction (savepoints here, inside the test's) included; where the
# database locks rows, the user's row too (the run cap counts their turns one at a time).
# 14: the cancel flag and the highest turn that has events are one read (two until 2026-12-05).
SET_UP_QUERIES = 14 + connection.features.has_select_for_update
FIRST_REQUEST_QUERIES = 5
# A model call that calls resident tools: its usage row. Its events are written with the
# calls' own when they are planned, after the user is shown them, and no working-set row
# is touched (4 until 2026-12-05: the events' transaction and INSERT, and an UPDATE that
# found no row).
RECORD_QUERIES = 1


def start(conversation, user, text):
    config, history, runtime, _ = _open_turn(conversation, "chat", (), user=user, user_message=text)
    return config, history, runtime


def first_request(conversation, config, history, runtime, text):
    messages = [*history, {"role": "user", "content": [{"type": "text", "text": text}]}]
    return _next_request(runtime, config, messages, stored_estimator(conversation, config.model))


def calling(config, name):
    return LLMResponse(
        content=(ToolUseBlock("call-1", name, {"title": "plan"}),),
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=5),
        model=config.model,
    )


def test_a_turns_set_up_and_first_request_make_a_bounded_number_of_queries(
    conversation, user, django_assert_max_num_queries
):
    for n in range(3):  # earlier turns (the first loads the registry): their messages are read in one query
        config, history, runtime = start(conversation, user, f"message {n}")
        first_request(conversation, config, history, runtime, f"message {n}")
        finish_turn(runtime, f"answer {n}", [])
    with django_assert_max_num_queries(SET_UP_QUERIES):
        config, history, runtime = start(conversation, user, "again")
    assert len(history) == 6
    with django_assert_max_num_queries(FIRST_REQUEST_QUERIES):
        request, _, _ = first_request(conversation, config, history, runtime, "again")
    assert request.messages[-1]["content"][-1]["text"].startswith("[CURRENT_STATE]")
    finish_turn(runtime, "done", [])


def test_a_call_of_resident_tools_is_recorded_in_one_query_and_its_events_wait_for_the_plan(
    conversation, user, django_assert_max_num_queries
):
    config, history, runtime = start(conversation, user, "make a plan")
    _, surface, _ = first_request(conversation, config, history, runtime, "make a plan")
    resident = surface.entries[0].name
    assert resident not in surface.working_set
    with django_assert_max_num_queries(RECORD_QUERIES):
        _record_call(runtime, config, calling(config, resident), surface, TokenEstimator())
    assert runtime.events_pending
    finish_turn(runtime, "done", [])
    recorded = ConversationEvent.objects.filter(conversation=conversation, event_type="llm_request")
    assert recorded.count() == 1

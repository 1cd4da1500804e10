"""A turn's start costs a fixed number of queries, however long the conversation has run:
its set-up and its first request read each thing once (bench/turn_start.py)."""

import pytest
from django.db import connection

from conversations.context import stored_estimator
from conversations.loop import _next_request, _open_turn
from conversations.turns import finish_turn

pytestmark = pytest.mark.django_db

# begin_turn's transaction (savepoints here, inside the test's) included; where the
# database locks rows, the user's row too (the run cap counts their turns one at a time).
SET_UP_QUERIES = 15 + connection.features.has_select_for_update
FIRST_REQUEST_QUERIES = 5


def start(conversation, user, text):
    config, history, runtime, _ = _open_turn(conversation, "chat", (), user=user, user_message=text)
    return config, history, runtime


def first_request(conversation, config, history, runtime, text):
    messages = [*history, {"role": "user", "content": [{"type": "text", "text": text}]}]
    request, _, _ = _next_request(runtime, config, messages, stored_estimator(conversation, config.model))
    return request


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
        request = first_request(conversation, config, history, runtime, "again")
    assert request.messages[-1]["content"][-1]["text"].startswith("[CURRENT_STATE]")
    finish_turn(runtime, "done", [])

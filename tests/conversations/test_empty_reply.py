"""An empty model reply leaves the conversation usable: the API never sees an empty message."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn

pytestmark = pytest.mark.django_db(transaction=True)

EMPTY = {"text": [], "usage": {"input_tokens": 10, "output_tokens": 0}}


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def test_the_message_after_an_empty_reply_is_answered(model, conversation, user):
    server = model([EMPTY, {"text": ["Here I am."], "expect": {"user_text_contains": "hello?"}}])
    assert run(conversation, user, "hi").text == ""
    assert run(conversation, user, "hello?").text == "Here I am."
    sent = server.requests[1].messages
    assert all(message["content"] for message in sent)
    assert [m["role"] for m in sent] == ["user"]
    assert [b["text"] for b in sent[0]["content"][:2]] == ["hi", "hello?"]


def test_an_empty_reply_before_the_plan_reminder_is_not_sent_back(model, conversation, user):
    conversation.mode = "agentic"
    conversation.plan = {"steps": [{"title": "Review", "status": "pending"}]}
    conversation.save()
    server = model([EMPTY, {"text": ["Reviewed."], "expect": {"user_text_contains": "1 open step(s): Review"}}])
    assert run(conversation, user, "finish").text == "Reviewed."
    assert all(message["content"] for message in server.requests[1].messages)

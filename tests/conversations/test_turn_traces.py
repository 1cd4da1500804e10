"""A turn is one trace: its invoke_agent span, and under it each model call and each tool call."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

CALL_WEATHER = {
    "tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "toolu_1"}],
    "usage": {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 4000},
}
ANSWER = {"text": "Rain in Oslo.", "usage": {"input_tokens": 1200, "output_tokens": 20}}


def test_a_turn_with_a_tool_call_is_one_trace(otel, model, weather_tool, conversation, user):
    model([CALL_WEATHER, ANSWER])
    async_to_sync(run_turn)(conversation, text="Weather in Oslo?", user=user)

    turn = otel.span("invoke_agent eunice")
    chats = otel.spans("chat claude-test")
    tool = otel.span("execute_tool weather")
    assert len(chats) == 2
    assert {s.context.trace_id for s in [turn, tool, *chats]} == {turn.context.trace_id}
    assert {s.parent.span_id for s in [tool, *chats]} == {turn.context.span_id}
    assert turn.attributes["gen_ai.conversation.id"] == str(conversation.pk)
    assert turn.attributes["eunice.tenant.id"] == TENANT
    assert chats[0].attributes["gen_ai.usage.cache_read.input_tokens"] == 4000
    assert tool.attributes["gen_ai.tool.call.id"] == "toolu_1"
    assert tool.attributes["eunice.surface.reason"] == "working_set"
    assert tool.attributes["gen_ai.conversation.id"] == str(conversation.pk)

"""A conversation with tool calls through the OpenAI-compatible provider: the real agent
loop and the real websocket, the real ``openai`` SDK, the scripted Chat Completions server."""

import pytest

from conversations.models import ChatMessage, UsageLog
from llm.models import ModelConfig
from llm.scripted import ScriptedChatCompletionsServer
from tests.conversations.test_agent_loop import run
from tests.conversations.test_websocket import answer_text, ask_over_a_socket

pytestmark = pytest.mark.django_db(transaction=True)

CALL_WEATHER = {
    "tool_uses": [{"name": "weather", "input": {"city": "Oslo", "reasoning": "the user asked"}, "id": "call_1"}],
    "usage": {"input_tokens": 1000, "output_tokens": 50},
}
ANSWER = {
    "thinking": ["The tool said rain."],
    "text": ["It is 14°C ", "and raining ", "in Oslo."],
    "usage": {"input_tokens": 1200, "output_tokens": 20},
    "expect": {"tool_result_contains": "Oslo: 14°C, light rain"},
}


@pytest.fixture
def chat_model():
    """chat_model(turns) -> a started OpenAI-compatible server that the chat role talks to,
    as gpt-4o-mini (priced from the catalog: no prices on the row)."""
    servers = []

    def start(turns, **options):
        server = ScriptedChatCompletionsServer(turns, **options).start()
        servers.append(server)
        ModelConfig.objects.update_or_create(
            role="chat",
            defaults={"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url, "max_output_tokens": 1024},
        )
        return server

    yield start
    for server in servers:
        server.stop()
    for server in servers:
        assert server.failures == [], server.failures


def test_the_model_calls_a_tool_and_answers_through_the_agent_loop(chat_model, weather_tool, conversation, user):
    server = chat_model([CALL_WEATHER, ANSWER])
    outcome = run(conversation, user, "What's the weather in Oslo?")
    assert (outcome.text, outcome.stop_reason, outcome.model_calls) == (
        "It is 14°C and raining in Oslo.",
        "end_turn",
        2,
    )
    assert "weather" in [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
    assert [m["role"] for m in server.requests[1].body["messages"]][-3:] == ["assistant", "tool", "user"]
    reply = ChatMessage.objects.get(conversation=conversation, role="assistant")
    assert reply.text == "It is 14°C and raining in Oslo."


def test_each_call_is_costed_from_the_catalog_price(chat_model, weather_tool, conversation, user):
    chat_model([CALL_WEATHER, ANSWER])
    run(conversation, user, "weather?")
    costs = list(
        UsageLog.objects.filter(kind="llm").order_by("id").values_list("input_tokens", "output_tokens", "cost_usd")
    )
    # gpt-4o-mini: $0.15 in, $0.60 out per million tokens.
    assert costs == [(1000, 50, pytest.approx(0.00018)), (1200, 20, pytest.approx(0.000192))]


def test_a_conversation_with_a_tool_call_streams_over_the_websocket(chat_model, weather_tool, conversation, user):
    chat_model([CALL_WEATHER, ANSWER])
    chunks = ask_over_a_socket(conversation, user, "What's the weather in Oslo?")
    kinds = [c["type"] for c in chunks]
    assert "thinking" in kinds and kinds[-1] == "done"
    assert answer_text(chunks) == "It is 14°C and raining in Oslo."

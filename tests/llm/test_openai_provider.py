"""The OpenAI-compatible provider against the scripted Chat Completions server, through the real ``openai`` SDK."""

import asyncio

import openai
import pytest

from llm import (
    LLMAuthError,
    LLMConnectionError,
    LLMContextTooLongError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMResponseError,
    MessageStop,
    TextDelta,
    ThinkingDelta,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
)
from llm.openai_request import NAME_LIMIT, token_limit_parameter, wire_name
from tests.llm.conftest import OPENAI_TEST_KEY, request

WEATHER = {"name": "weather", "description": "The weather", "input_schema": {"type": "object"}}
CLOCK = {"name": "clock", "description": "The time", "input_schema": {"type": "object"}}


def test_streamed_text_arrives_as_ordered_deltas_and_asks_for_usage(scripted_chat, openai_provider_for):
    server = scripted_chat([{"text": ["The ", "plan ", "is ", "ready."]}])
    events = list(openai_provider_for(server).stream(request("Plan it")))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["The ", "plan ", "is ", "ready."]
    assert isinstance(events[-1], MessageStop)
    assert (events[-1].response.text, events[-1].stop_reason) == ("The plan is ready.", "end_turn")
    body = server.requests[0].body
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are Eunice."}
    assert server.requests[0].api_key == OPENAI_TEST_KEY


def test_parallel_tool_calls_stream_their_arguments_in_pieces(scripted_chat, openai_provider_for):
    calls = [
        {"name": "weather", "input": {"city": "Lyon", "days": [1, 2, 3]}, "id": "call_a"},
        {"name": "clock", "input": {"zone": "Europe/Paris"}, "id": "call_b"},
    ]
    server = scripted_chat([{"text": "Looking.", "tool_uses": calls}])
    events = list(openai_provider_for(server).stream(request("Weather and time?", tools=[WEATHER, CLOCK])))

    starts = [(e.id, e.name) for e in events if isinstance(e, ToolUseStart)]
    pieces = [e for e in events if isinstance(e, ToolUseInputDelta)]
    stops = {e.id: e.input for e in events if isinstance(e, ToolUseStop)}
    assert starts == [("call_a", "weather"), ("call_b", "clock")]
    assert len({e.index for e in pieces}) == 2 and len(pieces) > 4
    assert stops == {"call_a": calls[0]["input"], "call_b": calls[1]["input"]}
    response = events[-1].response
    assert response.stop_reason == "tool_use"
    assert [(u.id, u.name) for u in response.tool_uses] == starts
    assert server.requests[0].body["tools"][0] == {
        "type": "function",
        "function": {"name": "weather", "parameters": {"type": "object"}, "description": "The weather"},
    }


def test_reasoning_content_is_thinking_and_is_not_sent_back(scripted_chat, openai_provider_for):
    server = scripted_chat([{"thinking": ["Weigh A", " against B."], "text": "B."}, {"text": "ok"}])
    provider = openai_provider_for(server)
    events = list(provider.stream(request("A or B?")))
    assert [e.thinking for e in events if isinstance(e, ThinkingDelta)] == ["Weigh A", " against B."]
    assert events[-1].response.thinking == "Weigh A against B."
    history = [
        {"role": "user", "content": "A or B?"},
        events[-1].response.to_message(),
        {"role": "user", "content": "Sure?"},
    ]
    list(provider.stream(request(*history)))
    assert server.requests[1].body["messages"][2] == {"role": "assistant", "content": "B."}


def test_usage_arrives_in_the_last_chunk_with_cached_tokens_apart(scripted_chat, openai_provider_for):
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 9000}
    server = scripted_chat([{"text": "ok", "usage": usage}])
    events = list(openai_provider_for(server).stream(request("Hi")))
    updates = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert len(updates) == 1
    assert (updates[0].input_tokens, updates[0].output_tokens, updates[0].cache_read_input_tokens) == (1200, 80, 9000)
    assert events[-1].response.usage == updates[0]


def test_a_tool_loops_history_satisfies_the_apis_message_rules(scripted_chat, openai_provider_for):
    server = scripted_chat(
        [
            {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}}, {"name": "clock", "input": {}}]},
            {"text": "Done.", "expect": {"tool_result_contains": "14°C"}},
        ]
    )
    provider = openai_provider_for(server)
    first = list(provider.stream(request("Go", tools=[WEATHER, CLOCK])))[-1].response
    results = [
        {"type": "tool_result", "tool_use_id": use.id, "content": [{"type": "text", "text": text}]}
        for use, text in zip(first.tool_uses, ["Oslo: 14°C", "09:00"], strict=True)
    ]
    history = ["Go", first.to_message(), {"role": "user", "content": [*results, {"type": "text", "text": "[state]"}]}]
    answer = list(provider.stream(request(*history, tools=[WEATHER, CLOCK])))[-1].response
    assert answer.text == "Done."
    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert sent[2]["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city":"Oslo"}'}


def test_the_scripted_server_refuses_an_unanswered_tool_call(scripted_chat):
    server = scripted_chat([{"text": "never"}])
    messages = [
        {"role": "user", "content": "Go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}],
        },
        {"role": "user", "content": "And?"},
    ]
    client = openai.OpenAI(api_key=OPENAI_TEST_KEY, base_url=server.url, max_retries=0)
    with pytest.raises(openai.BadRequestError, match="did not have response messages: c1"):
        client.chat.completions.create(model="m", messages=messages)
    client.close()
    server.failures.clear()


def test_a_tool_name_the_api_refuses_goes_as_a_valid_one_and_comes_back_as_ours(scripted_chat, openai_provider_for):
    long_name = "mcp__" + "very_long_server_name." * 5 + "search"
    sent = wire_name(long_name)
    assert len(sent) <= NAME_LIMIT and sent != long_name
    server = scripted_chat([{"tool_uses": [{"name": sent, "input": {"q": 1}}]}])
    tool = {"name": long_name, "description": "d", "input_schema": {"type": "object"}}
    response = list(openai_provider_for(server).stream(request("Go", tools=[tool])))[-1].response
    assert response.tool_uses[0].name == long_name
    assert server.requests[0].body["tools"][0]["function"]["name"] == sent


def test_the_real_sdk_reads_the_scripted_stream(scripted_chat):
    server = scripted_chat([{"text": ["Hel", "lo"], "tool_uses": [{"name": "weather", "input": {"city": "Oslo"}}]}])
    client = openai.OpenAI(api_key=OPENAI_TEST_KEY, base_url=server.url, max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], stream=True, stream_options={"include_usage": True}
        )
    )
    client.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(
        call.function.arguments or "" for c in chunks if c.choices for call in c.choices[0].delta.tool_calls or []
    )
    assert (text, arguments) == ("Hello", '{"city": "Oslo"}')
    assert chunks[-1].usage is not None and chunks[-2].choices[0].finish_reason == "tool_calls"


def test_complete_and_astream_give_the_same_answer(scripted_chat, openai_provider_for):
    turn = {
        "text": "Fine.",
        "tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "c1"}],
        "usage": {"input_tokens": 5},
    }
    server = scripted_chat([turn, turn])
    provider = openai_provider_for(server)
    completed = provider.complete(request("Hi"))

    async def streamed():
        return [event async for event in provider.astream(request("Hi"))][-1].response

    streamed_response = asyncio.run(streamed())
    assert (streamed_response.content, streamed_response.usage) == (completed.content, completed.usage)
    assert (completed.text, completed.tool_uses[0].input, completed.usage.input_tokens) == (
        "Fine.",
        {"city": "Oslo"},
        5,
    )


def test_a_refused_key_is_an_auth_error_that_never_shows_the_key(scripted_chat, openai_provider_for):
    server = scripted_chat([{"error": {"status": 401, "type": "invalid_api_key", "message": "bad key {api_key}"}}])
    with pytest.raises(LLMAuthError) as caught:
        list(openai_provider_for(server).stream(request("Hi")))
    assert OPENAI_TEST_KEY not in str(caught.value) and "bad key ***" in str(caught.value)


def test_a_rate_limit_is_retried_then_typed(scripted_chat, openai_provider_for):
    limit = {"status": 429, "type": "rate_limit_exceeded", "message": "slow down", "headers": {"retry-after-ms": "1"}}
    server = scripted_chat([{"error": limit}, {"text": "ok"}, {"error": limit}, {"error": limit}])
    provider = openai_provider_for(server, max_retries=1)
    assert list(provider.stream(request("Hi")))[-1].response.text == "ok"
    with pytest.raises(LLMRateLimitError):
        list(provider.stream(request("Hi")))
    assert len(server.requests) == 4


def test_a_prompt_past_the_window_says_how_long_it_was(scripted_chat, openai_provider_for):
    message = (
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens. "
        "Please reduce the length of the messages."
    )
    server = scripted_chat([{"error": {"status": 400, "type": "context_length_exceeded", "message": message}}])
    with pytest.raises(LLMContextTooLongError) as caught:
        list(openai_provider_for(server).stream(request("Hi")))
    assert (caught.value.prompt_tokens, caught.value.limit) == (9001, 8192)


def test_an_error_in_the_middle_of_the_stream_is_typed(scripted_chat, openai_provider_for):
    server = scripted_chat(
        [{"text": "Half", "stream_error": {"status": 200, "type": "server_error", "message": "boom"}}]
    )
    with pytest.raises(LLMOverloadedError, match="boom"):
        list(openai_provider_for(server).stream(request("Hi")))


def test_broken_tool_arguments_are_a_response_error(scripted_chat, openai_provider_for):
    server = scripted_chat([{"tool_uses": [{"name": "weather", "raw_input": '{"city": '}]}])
    with pytest.raises(LLMResponseError, match="unreadable input for tool 'weather'"):
        list(openai_provider_for(server).stream(request("Hi")))


def test_an_unreachable_server_is_a_connection_error():
    from llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=5)
    with pytest.raises(LLMConnectionError, match="127.0.0.1"):
        list(provider.stream(request("Hi")))
    provider.close()


def test_with_strict_tools_a_function_goes_strict_and_its_added_nulls_are_dropped(scripted_chat, openai_provider_for):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
    server = scripted_chat([{"tool_uses": [{"name": "weather", "input": {"city": "Lyon", "days": None}}]}])
    tool = {"name": "weather", "description": "The weather", "input_schema": schema}
    response = openai_provider_for(server).complete(
        request("Lyon?", tools=[tool], capabilities=frozenset({"strict_tools"}))
    )
    assert response.tool_uses[0].input == {"city": "Lyon"}
    function = server.requests[0].body["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
        "required": ["city", "days"],
        "additionalProperties": False,
    }


def test_without_strict_tools_a_function_is_sent_as_our_schema_has_it(scripted_chat, openai_provider_for):
    server = scripted_chat([{"text": "ok"}])
    openai_provider_for(server).complete(request("Hi", tools=[WEATHER]))
    assert "strict" not in server.requests[0].body["tools"][0]["function"]


@pytest.mark.parametrize(
    ("base_url", "parameter"),
    [
        (None, "max_completion_tokens"),
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("https://my-resource.openai.azure.com/openai/v1/", "max_completion_tokens"),
        ("http://127.0.0.1:11434/v1", "max_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
        ("https://api.openai.com.example.net/v1", "max_tokens"),
    ],
)
def test_openais_own_endpoints_get_the_token_limit_as_max_completion_tokens(base_url, parameter):
    # OpenAI's and Azure's reasoning models refuse max_tokens; Ollama and llama.cpp know only it.
    from llm.openai_provider import OpenAIProvider

    assert token_limit_parameter(base_url) == parameter
    params, _ = OpenAIProvider(base_url=base_url)._params(request("Hi", max_tokens=100), stream=True)
    assert params[parameter] == 100
    assert {"max_tokens", "max_completion_tokens"} & set(params) == {parameter}


def test_another_server_gets_the_token_limit_as_max_tokens(scripted_chat, openai_provider_for):
    server = scripted_chat([{"text": "ok"}])
    openai_provider_for(server).complete(request("Hi", max_tokens=100))
    assert server.requests[0].body["max_tokens"] == 100
    assert "max_completion_tokens" not in server.requests[0].body

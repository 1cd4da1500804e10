"""The Responses API provider against the scripted Responses server, through the real ``openai`` SDK:
streamed text and tool calls, usage, strict schemas, tool names, and the hosted web search."""

import asyncio

import pytest

from llm import (
    LLMBadRequestError,
    LLMOverloadedError,
    MessageStop,
    TextDelta,
    ThinkingDelta,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
)
from llm.capabilities import STRICT_TOOLS, WEB_SEARCH
from llm.models import ModelConfig
from llm.openai_request import strict_schema, without_added_nulls
from llm.types import LLMRequest
from tests.llm.conftest import request

FORECAST = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "default": 3},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "reasoning": {"type": "string"},
    },
    "required": ["city", "reasoning"],
}
WEATHER = {"name": "weather", "description": "The forecast", "input_schema": FORECAST}


def test_streamed_text_arrives_as_ordered_deltas_with_the_system_prompt_as_instructions(
    scripted_responses, responses_provider_for
):
    server = scripted_responses([{"thinking": ["Hm, "], "text": ["The ", "plan ", "is ", "ready."]}])
    events = list(responses_provider_for(server).stream(request("Plan it")))
    assert [e.thinking for e in events if isinstance(e, ThinkingDelta)] == ["Hm, "]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["The ", "plan ", "is ", "ready."]
    assert (events[-1].response.text, events[-1].stop_reason) == ("The plan is ready.", "end_turn")
    body = server.requests[0].body
    assert (body["instructions"], body["store"], body["max_output_tokens"]) == ("You are Eunice.", False, 256)
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Plan it"}]}]


def test_parallel_tool_calls_stream_their_arguments_and_come_back_as_tool_uses(
    scripted_responses, responses_provider_for
):
    calls = [
        {"name": "weather", "input": {"city": "Lyon", "reasoning": "asked"}, "id": "call_a"},
        {"name": "weather", "input": {"city": "Oslo", "reasoning": "asked"}, "id": "call_b"},
    ]
    server = scripted_responses([{"tool_uses": calls, "usage": {"input_tokens": 900, "cache_read_input_tokens": 100}}])
    events = list(responses_provider_for(server).stream(request("Lyon and Oslo?", tools=[WEATHER])))
    assert [(e.id, e.name) for e in events if isinstance(e, ToolUseStart)] == [
        ("call_a", "weather"),
        ("call_b", "weather"),
    ]
    assert len([e for e in events if isinstance(e, ToolUseInputDelta)]) > 4
    assert {e.id: e.input for e in events if isinstance(e, ToolUseStop)} == {c["id"]: c["input"] for c in calls}
    response = events[-1].response
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.cache_read_input_tokens) == (900, 100)


def test_a_tool_loops_history_goes_back_as_function_call_items_answered_by_their_outputs(
    scripted_responses, responses_provider_for
):
    server = scripted_responses([{"text": "Sunny in Lyon.", "expect": {"tool_result_contains": "sunny"}}])
    history = [
        {"role": "user", "content": "Weather in Lyon?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_a", "name": "weather", "input": {"city": "Lyon"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "sunny, 21 °C"}]},
    ]
    response = responses_provider_for(server).complete(request(*history, tools=[WEATHER]))
    assert response.text == "Sunny in Lyon."
    items = server.requests[0].body["input"]
    assert items[1] == {"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": '{"city":"Lyon"}'}
    assert items[2] == {"type": "function_call_output", "call_id": "call_a", "output": "sunny, 21 °C"}


def test_without_strict_tools_every_function_says_it_is_not_strict(scripted_responses, responses_provider_for):
    # The API takes a function strict unless told otherwise, and would refuse this schema.
    server = scripted_responses([{"text": "ok"}])
    responses_provider_for(server).complete(request("Hi", tools=[WEATHER]))
    sent = server.requests[0].body["tools"][0]
    assert (sent["name"], sent["strict"], sent["parameters"]) == ("weather", False, FORECAST)


def test_with_strict_tools_optional_properties_go_as_nullable_and_their_nulls_never_reach_the_tool(
    scripted_responses, responses_provider_for
):
    call = {"name": "weather", "input": {"city": "Lyon", "days": None, "units": None, "reasoning": "asked"}}
    server = scripted_responses([{"tool_uses": [call]}])
    provider = responses_provider_for(server)
    response = provider.complete(request("Lyon?", tools=[WEATHER], capabilities=frozenset({STRICT_TOOLS})))
    assert response.tool_uses[0].input == {"city": "Lyon", "reasoning": "asked"}
    sent = server.requests[0].body["tools"][0]
    assert sent["strict"] is True
    assert sent["parameters"]["required"] == ["city", "days", "units", "reasoning"]
    assert sent["parameters"]["properties"]["days"] == {"type": ["integer", "null"], "minimum": 1}
    assert sent["parameters"]["properties"]["units"]["enum"] == ["metric", "imperial", None]


def test_the_scripted_server_refuses_a_strict_schema_with_an_optional_property(scripted_responses):
    import openai

    server = scripted_responses([{"text": "never"}])
    client = openai.OpenAI(api_key="sk-test-xxxxxxxxxxxx", base_url=server.url, max_retries=0)
    function = {"type": "function", "name": "weather", "parameters": FORECAST, "strict": True}
    with pytest.raises(openai.BadRequestError, match="Missing 'days'"):
        client.responses.create(model="m", input="Hi", tools=[function])
    client.close()
    server.failures.clear()


def test_a_schema_strict_mode_cannot_express_is_sent_not_strict():
    open_object = {"type": "object", "properties": {"filters": {"type": "object"}}, "required": ["filters"]}
    assert strict_schema(open_object) is None
    assert strict_schema({"type": "object", "properties": {"n": {"type": "integer", "not": {"const": 3}}}}) is None
    assert strict_schema({"type": "object", "properties": {}, "additionalProperties": True}) is None


LINK = {
    "type": "object",
    "properties": {"url": {"type": "string", "format": "uri"}, "when": {"type": "string", "format": "date-time"}},
    "required": ["url", "when"],
}


def test_a_string_format_strict_mode_does_not_know_sends_the_tool_not_strict(
    scripted_responses, responses_provider_for
):
    # An MCP server's "format": "uri" would make the API refuse the whole request.
    server = scripted_responses([{"text": "ok"}])
    link = {"name": "open_link", "input_schema": LINK}
    provider = responses_provider_for(server)
    provider.complete(request("Hi", tools=[link], capabilities=frozenset({STRICT_TOOLS})))
    assert server.requests[0].body["tools"][0]["strict"] is False
    dated = {**LINK, "properties": {"when": LINK["properties"]["when"]}, "required": ["when"]}
    assert strict_schema(dated) is not None  # a format strict mode knows stays strict


def test_the_scripted_server_refuses_a_strict_schema_with_a_format_it_does_not_know(scripted_responses):
    import openai

    server = scripted_responses([{"text": "never"}])
    client = openai.OpenAI(api_key="sk-test-xxxxxxxxxxxx", base_url=server.url, max_retries=0)
    function = {"type": "function", "name": "open_link", "parameters": {**LINK, "additionalProperties": False}}
    with pytest.raises(openai.BadRequestError, match="'format' 'uri' is not permitted"):
        client.responses.create(model="m", input="Hi", tools=[function])
    client.close()
    server.failures.clear()


def test_a_null_the_tools_own_schema_allows_is_kept():
    schema = {"type": "object", "properties": {"note": {"type": ["string", "null"]}, "tag": {"type": "string"}}}
    assert without_added_nulls({"note": None, "tag": None}, schema) == {"note": None}


def test_a_nested_optional_null_is_dropped_too():
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}}},
        "required": ["rows"],
    }
    assert without_added_nulls({"rows": [{"x": None}, {"x": 1}]}, schema) == {"rows": [{}, {"x": 1}]}


def test_a_tool_name_the_api_refuses_goes_as_a_valid_one_and_comes_back_as_ours(
    scripted_responses, responses_provider_for
):
    long_name = "mcp__" + "very_long_server_name__" * 3 + "tool.with.dots"
    from llm.openai_request import wire_name

    server = scripted_responses([{"tool_uses": [{"name": wire_name(long_name), "input": {}}]}])
    tool = {"name": long_name, "description": "x", "input_schema": {"type": "object"}}
    response = responses_provider_for(server).complete(request("Go", tools=[tool]))
    assert response.tool_uses[0].name == long_name
    assert server.requests[0].body["tools"][0]["name"] == wire_name(long_name)


def test_the_web_search_capability_adds_the_hosted_tool_and_its_searches_come_back_as_text(
    scripted_responses, responses_provider_for
):
    server = scripted_responses([{"web_searches": ["oslo weather"], "text": ["Oslo: ", "rain."]}])
    events = list(
        responses_provider_for(server).stream(request("Weather in Oslo?", capabilities=frozenset({WEB_SEARCH})))
    )
    assert events[-1].response.text == "Oslo: rain."
    assert events[-1].response.tool_uses == []  # the provider ran the search: nothing for us to run
    assert server.requests[0].body["tools"] == [{"type": "web_search"}]


def test_a_request_without_the_capability_offers_no_hosted_search_and_the_server_says_so(
    scripted_responses, responses_provider_for
):
    server = scripted_responses([{"web_searches": ["oslo weather"], "text": "rain"}])
    with pytest.raises(LLMBadRequestError):
        responses_provider_for(server).complete(request("Weather in Oslo?"))
    assert "offers no web_search tool" in server.failures[0]
    server.failures.clear()


def test_a_rows_claimed_capabilities_reach_the_request_only_when_its_provider_delivers_them():
    claims = {"web_search": True, "strict_tools": True}
    responses_row = ModelConfig(role="chat", provider="openai_responses", model="gpt-5", capabilities=claims)
    chat_row = ModelConfig(role="chat", provider="openai", model="gpt-5", capabilities=claims)
    anthropic_row = ModelConfig(role="chat", provider="anthropic", model="claude", capabilities=claims)
    made = {
        row.provider: LLMRequest.for_model(row, system="", messages=[]).capabilities
        for row in (responses_row, chat_row, anthropic_row)
    }
    # A hosted tool (the web search) only where the caller passes it, having vetted it.
    assert made == {
        "openai_responses": {STRICT_TOOLS},
        "openai": {STRICT_TOOLS},
        "anthropic": set(),
    }
    vetted = frozenset({WEB_SEARCH, STRICT_TOOLS})
    assert LLMRequest.for_model(responses_row, system="", messages=[], capabilities=vetted).capabilities == vetted


def test_an_answer_cut_at_the_token_limit_keeps_its_text_and_names_the_cut_call(
    scripted_responses, responses_provider_for
):
    server = scripted_responses(
        [{"text": "Let me check.", "tool_uses": [{"name": "weather", "input": {"city": "Lyon"}, "cut": True}]}]
    )
    response = responses_provider_for(server).complete(request("Lyon?", tools=[WEATHER]))
    assert (response.stop_reason, response.text, response.cut_tool_uses) == (
        "max_tokens",
        "Let me check.",
        ("weather",),
    )


def test_complete_and_astream_give_the_same_answer(scripted_responses, responses_provider_for):
    turn = {"text": ["Two ", "ways."], "tool_uses": [{"name": "weather", "input": {"city": "Rome"}, "id": "c1"}]}
    server = scripted_responses([turn, turn])
    provider = responses_provider_for(server)
    whole = provider.complete(request("Go", tools=[WEATHER]))

    async def streamed():
        return [event async for event in provider.astream(request("Go", tools=[WEATHER]))]

    events = asyncio.run(streamed())
    assert isinstance(events[-1], MessageStop)
    assert events[-1].response.content == whole.content
    assert events[-1].response.stop_reason == whole.stop_reason == "tool_use"


def test_an_error_in_the_middle_of_the_stream_is_typed(scripted_responses, responses_provider_for):
    server = scripted_responses(
        [{"text": "Hal", "stream_error": {"status": 500, "type": "server_error", "message": "boom"}}]
    )
    with pytest.raises(LLMOverloadedError) as caught:
        list(responses_provider_for(server).stream(request("Go")))
    assert "boom" in str(caught.value)

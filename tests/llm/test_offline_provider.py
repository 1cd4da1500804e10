import pytest

from llm import LLMRequest, MessageStop, ToolUseStop
from llm.offline import OfflineProvider
from tests.llm.conftest import request, state_block

TOOLS = [{"name": "search_tools", "description": "Find tools.", "input_schema": {"type": "object"}}]


def answer(text, tools=TOOLS):
    return OfflineProvider().complete(
        request({"role": "user", "content": [{"type": "text", "text": text}, state_block()]}, tools=tools)
    )


def test_without_a_model_it_says_so_and_how_to_configure_one():
    response = answer("What's the weather?")
    assert response.stop_reason == "end_turn" and not response.tool_uses
    for needed in ("No language model is configured", "ANTHROPIC_API_KEY", "ModelConfig", "/search_tools"):
        assert needed in response.text


def test_a_slash_command_becomes_a_tool_use_block():
    response = answer('/search_tools {"query": "make a plan", "limit": 3}')
    assert response.stop_reason == "tool_use"
    (call,) = response.tool_uses
    assert (call.name, call.input) == ("search_tools", {"query": "make a plan", "limit": 3})
    assert call.id.startswith("toolu_offline_")


def test_a_slash_command_without_arguments_calls_the_tool_with_nothing():
    assert answer("  /plan  ").tool_uses[0].input == {}


def test_arguments_may_span_lines():
    assert answer('/plan {\n  "steps": ["a",\n "b"]\n}').tool_uses[0].input == {"steps": ["a", "b"]}


def test_invalid_json_is_explained_with_an_example_and_runs_nothing():
    response = answer("/search_tools {query: plan}")
    assert not response.tool_uses
    assert "not valid JSON" in response.text and "line 1, column 2" in response.text
    assert '/search_tools {"query": "make a plan"}' in response.text


def test_json_that_is_not_an_object_is_refused():
    response = answer("/search_tools [1, 2]")
    assert not response.tool_uses and "must be a JSON object" in response.text


def test_after_the_tool_ran_the_reply_is_its_result_and_the_turn_ends():
    first = answer('/search_tools {"query": "x"}')
    result = {
        "type": "tool_result",
        "tool_use_id": first.tool_uses[0].id,
        "content": [{"type": "text", "text": "✓ ok. 3 tools found"}],
    }
    response = OfflineProvider().complete(
        request(
            {"role": "user", "content": '/search_tools {"query": "x"}'},
            first.to_message(),
            {"role": "user", "content": [result, state_block()]},
        )
    )
    assert response.stop_reason == "end_turn" and response.text == "✓ ok. 3 tools found"


def test_the_offline_stream_has_the_same_shape_as_a_real_one():
    events = list(OfflineProvider().stream(request('/plan {"a": 1}')))
    assert [type(e).__name__ for e in events] == ["ToolUseStart", "ToolUseStop", "UsageUpdate", "MessageStop"]
    assert isinstance(events[1], ToolUseStop) and events[1].input == {"a": 1}
    assert isinstance(events[-1], MessageStop) and events[-1].response.usage.output_tokens == 0


@pytest.mark.asyncio
async def test_the_offline_provider_answers_async_callers_too():
    provider = OfflineProvider()
    events = [e async for e in provider.astream(request("hello"))]
    assert "ANTHROPIC_API_KEY" in events[-1].response.text
    assert (await provider.acomplete(request("/plan"))).tool_uses[0].name == "plan"


def test_with_an_empty_history_it_still_explains_itself():
    empty = LLMRequest(model="offline", system="", messages=[], max_tokens=10)
    assert "No language model is configured" in OfflineProvider().complete(empty).text

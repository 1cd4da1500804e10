import copy

from llm.anthropic_request import build_params
from tests.llm.conftest import request, state_block

EPHEMERAL = {"type": "ephemeral"}


def marked(params) -> list[dict]:
    found = [b for b in params.get("system", []) if "cache_control" in b]
    for message in params["messages"]:
        found += [b for b in message["content"] if "cache_control" in b]
    return found


def test_the_breakpoint_sits_on_the_block_before_the_current_state_block(scripted, provider_for):
    server = scripted([{"text": "ok"}])
    history = [
        {"role": "user", "content": "Map the rivers"},
        {"role": "assistant", "content": [{"type": "text", "text": "Which region?"}]},
        {"role": "user", "content": [{"type": "text", "text": "Provence"}, state_block()]},
    ]
    provider_for(server).complete(request(*history))

    sent = server.requests[0]
    assert sent.cache_marked() == [{"type": "text", "text": "Provence", "cache_control": EPHEMERAL}]
    assert "cache_control" not in sent.messages[-1]["content"][-1], "the varying block stays uncached"


def test_after_tool_calls_the_breakpoint_is_on_the_last_tool_result(scripted, provider_for):
    server = scripted([{"text": "ok"}])
    history = [
        {"role": "user", "content": "Plan"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "plan", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "planned"}, state_block()],
        },
    ]
    provider_for(server).stream(request(*history)).__next__()
    server.resume()
    assert [b["type"] for b in server.requests[0].cache_marked()] == ["tool_result"]


def test_a_state_only_user_message_puts_the_breakpoint_on_the_previous_message():
    params = build_params(
        request(
            {"role": "user", "content": "Hi"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "x", "signature": "s"}, {"type": "text", "text": "Hello"}],
            },
            {"role": "user", "content": [state_block()]},
        )
    )
    assert marked(params) == [{"type": "text", "text": "Hello", "cache_control": EPHEMERAL}]


def test_thinking_blocks_never_carry_the_breakpoint():
    params = build_params(
        request(
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]},
            {"role": "user", "content": [state_block()]},
        )
    )
    assert marked(params) == [{"type": "text", "text": "Hi", "cache_control": EPHEMERAL}]


def test_on_the_first_turn_the_system_prompt_carries_the_breakpoint():
    params = build_params(request({"role": "user", "content": [state_block()]}, system="Be brief."))
    assert params["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]


def test_there_is_exactly_one_breakpoint_and_the_callers_history_is_untouched():
    history = [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "Again"}, state_block()]},
    ]
    before = copy.deepcopy(history)
    req = request(*history)
    for _ in range(3):  # a loop re-sends the same history every turn
        assert len(marked(build_params(req))) == 1
    assert history == before


def test_the_breakpoint_can_be_turned_off():
    params = build_params(request("Hi", cache_breakpoint_before_last_user=False))
    assert marked(params) == []


def test_the_system_prompt_and_tool_schemas_are_sent_as_given_and_left_untouched():
    tools = [{"name": "weather", "description": "Weather.", "input_schema": {"type": "object", "properties": {}}}]
    system = [{"type": "text", "text": "Be brief."}]
    req = request({"role": "user", "content": [state_block()]}, system=system, tools=tools)
    before = copy.deepcopy((system, tools))

    params = build_params(req)

    assert params["system"] == [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]
    assert params["tools"] == tools
    assert (system, tools) == before

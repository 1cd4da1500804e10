import asyncio

import pytest

from llm import (
    MessageStop,
    TextDelta,
    ThinkingDelta,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
    anthropic_provider,
)
from llm.anthropic_provider import AnthropicProvider, _tls_context, warm_up
from llm.scripted.render import http_chunk, signature_for, sse, stream_events
from llm.scripted.script import Turn
from tests.llm.conftest import TEST_KEY, request


def test_streamed_text_arrives_as_ordered_deltas(scripted, provider_for):
    server = scripted([{"text": ["The ", "plan ", "is ", "ready."]}])
    events = list(provider_for(server).stream(request("Plan it")))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["The ", "plan ", "is ", "ready."]
    assert isinstance(events[-1], MessageStop)
    assert events[-1].response.text == "The plan is ready."
    assert events[-1].stop_reason == "end_turn"


def test_a_tool_use_blocks_streamed_input_json_is_assembled(scripted, provider_for):
    tool_input = {"query": "weather in Lyon", "filters": {"days": 3, "units": ["C"]}}
    server = scripted([{"text": "Let me look.", "tool_uses": [{"name": "search_tools", "input": tool_input}]}])
    events = list(provider_for(server).stream(request("Weather?")))

    starts = [e for e in events if isinstance(e, ToolUseStart)]
    pieces = [e.partial_json for e in events if isinstance(e, ToolUseInputDelta)]
    stops = [e for e in events if isinstance(e, ToolUseStop)]
    assert [s.name for s in starts] == ["search_tools"]
    assert len(pieces) > 1, "the scripted server streams tool input in pieces"
    assert stops[0].input == tool_input and stops[0].id == starts[0].id
    response = events[-1].response
    assert response.stop_reason == "tool_use"
    assert response.tool_uses[0].input == tool_input


def test_thinking_deltas_are_kept_apart_from_the_answer(scripted, provider_for):
    server = scripted([{"thinking": ["Weigh A", " against B."], "text": ["B is better."]}])
    events = list(provider_for(server).stream(request("A or B?", thinking_budget_tokens=1024, max_tokens=2048)))
    assert [e.thinking for e in events if isinstance(e, ThinkingDelta)] == ["Weigh A", " against B."]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["B is better."]
    response = events[-1].response
    assert (response.thinking, response.text) == ("Weigh A against B.", "B is better.")
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_thinking_goes_back_with_its_signature_in_the_next_turns_history(scripted, provider_for):
    server = scripted([{"thinking": "Need a tool.", "tool_uses": [{"name": "plan", "input": {}}]}])
    response = list(provider_for(server).stream(request("Go")))[-1].response
    thinking, tool_use = response.to_message()["content"]
    assert thinking == {"type": "thinking", "thinking": "Need a tool.", "signature": signature_for("Need a tool.")}
    assert tool_use["type"] == "tool_use" and tool_use["name"] == "plan"


def test_usage_updates_end_with_the_turns_totals(scripted, provider_for):
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 9000}
    server = scripted([{"text": "ok", "usage": usage}])
    events = list(provider_for(server).stream(request("Hi")))
    updates = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert updates[0].output_tokens == 1  # message_start reports a placeholder
    assert (updates[-1].input_tokens, updates[-1].output_tokens, updates[-1].cache_read_input_tokens) == (
        1200,
        80,
        9000,
    )
    assert events[-1].response.usage == updates[-1]


def test_deltas_reach_the_caller_while_the_server_is_still_streaming(scripted, provider_for):
    # The server holds the stream after the first text delta until resumed.
    server = scripted([{"text": ["first", " second"], "pause_after": 4}])
    stream = provider_for(server).stream(request("Hi"))
    first_text = next(e for e in stream if isinstance(e, TextDelta))
    assert first_text.text == "first"
    server.resume()
    assert [e.text for e in stream if isinstance(e, TextDelta)] == [" second"]


def test_a_tool_result_round_trip_meets_the_scripts_expectation(scripted, provider_for):
    server = scripted(
        [
            {"tool_uses": [{"name": "echo", "input": {"text": "hi"}}]},
            {"text": "Done.", "expect": {"tool_result_contains": "echoed: hi", "tools_include": ["echo"]}},
        ]
    )
    provider = provider_for(server)
    tools = [{"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}}]
    first = provider.complete(request("Echo hi", tools=tools))
    result = {"type": "tool_result", "tool_use_id": first.tool_uses[0].id, "content": "echoed: hi"}
    history = [{"role": "user", "content": "Echo hi"}, first.to_message(), {"role": "user", "content": [result]}]
    second = provider.complete(request(*history, tools=tools))
    assert second.text == "Done."
    assert server.requests[1].messages[-1]["content"][0]["tool_use_id"] == first.tool_uses[0].id


def test_non_streaming_complete_returns_the_same_blocks(scripted, provider_for):
    server = scripted([{"thinking": "hm", "text": "Answer.", "tool_uses": [{"name": "plan", "input": {"a": 1}}]}])
    response = provider_for(server).complete(request("Hi"))
    assert [b.type for b in response.content] == ["thinking", "text", "tool_use"]
    assert response.tool_uses[0].input == {"a": 1}
    assert server.requests[0].stream is False


@pytest.mark.asyncio
async def test_the_async_stream_yields_the_same_typed_events(scripted, provider_for):
    server = scripted([{"text": ["a", "b"], "tool_uses": [{"name": "plan", "input": {"x": [1, 2]}}]}])
    provider = provider_for(server)
    events = [e async for e in provider.astream(request("Hi"))]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["a", "b"]
    assert events[-1].response.tool_uses[0].input == {"x": [1, 2]}


@pytest.mark.asyncio
async def test_a_tool_call_and_the_answer_after_it_share_one_connection(scripted, provider_for):
    # The caller stops at message_stop; the end of the body must still be read,
    # or the connection is closed and every model call opens (and, to the real
    # API, handshakes) a new one.
    server = scripted([{"tool_uses": [{"name": "plan", "input": {}}]}, {"text": "done"}, {"text": "again"}])
    provider = provider_for(server)

    for _ in range(3):
        async for event in provider.astream(request("Hi")):
            if isinstance(event, MessageStop):
                break

    assert [r.connection for r in server.requests] == [1, 1, 1]
    assert server.connections == 1


@pytest.mark.asyncio
async def test_a_stream_left_open_after_message_stop_still_ends_the_answer(monkeypatch):
    monkeypatch.setattr(anthropic_provider, "END_OF_BODY_SECONDS", 0.2)
    body_ended = asyncio.Event()

    async def never_ending_body(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for name, data in stream_events(Turn(text=("hello",)), model="m", message_id="msg_1"):
            writer.write(http_chunk(sse(name, data)))
        await writer.drain()
        await body_ended.wait()  # never sends the body's last chunk
        writer.close()

    listener = await asyncio.start_server(never_ending_body, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    provider = AnthropicProvider(api_key=TEST_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)
    try:
        started = asyncio.get_running_loop().time()
        events = [e async for e in provider.astream(request("Hi"))]
        waited = asyncio.get_running_loop().time() - started
    finally:
        body_ended.set()
        listener.close()
        await listener.wait_closed()

    assert events[-1].response.text == "hello"
    assert waited < 2


@pytest.mark.asyncio
async def test_async_complete_talks_to_the_server(scripted, provider_for):
    server = scripted([{"text": "pong"}])
    provider = provider_for(server)
    response = await asyncio.wait_for(provider.acomplete(request("ping")), timeout=10)
    assert response.text == "pong"


@pytest.mark.asyncio
async def test_every_async_client_shares_the_process_tls_context():
    # Loading the CA bundle costs ~20 ms of CPU; a loop's first model call
    # used to pay it on the event loop while other answers streamed.
    provider = AnthropicProvider(api_key=TEST_KEY, base_url="http://127.0.0.1:9")

    client = await provider.async_client()

    assert client._client._transport.ssl_context is _tls_context()


def test_warming_up_loads_the_sdks_trace_propagators_once():
    from anthropic._tracing import trace_context_injector

    trace_context_injector.cache_clear()
    warm_up()

    assert trace_context_injector.cache_info().currsize == 1


def test_thinking_cut_off_before_its_signature_is_not_sent_back():
    from llm import LLMResponse, TextBlock, ThinkingBlock, Usage

    cut = LLMResponse((ThinkingBlock("Half a tho"), TextBlock("")), "max_tokens", Usage(), "m")
    assert cut.to_message() == {"role": "assistant", "content": []}

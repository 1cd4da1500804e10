"""A model's stream or tool input nested past EUNICE_JSON_MAX_DEPTH is an LLMResponseError
naming the limit (a turn that ends saying why), never a RecursionError."""

import json

import pytest

from llm.anthropic_stream import SSEBuffer, StreamAssembler
from llm.errors import LLMResponseError
from llm.offline import OfflineProvider
from llm.types import LLMRequest

DEPTH = 100_000


def tool_block_events(partial_json: str) -> list[dict]:
    return [
        {"type": "message_start", "message": {"id": "m1", "model": "claude-test", "usage": {"input_tokens": 1}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": partial_json},
        },
        {"type": "content_block_stop", "index": 0},
    ]


@pytest.mark.parametrize("depth", [65, DEPTH])
def test_deep_streamed_tool_input_is_a_response_error_naming_the_limit(depth):
    assembler = StreamAssembler()
    with pytest.raises(LLMResponseError, match="EUNICE_JSON_MAX_DEPTH"):
        for event in tool_block_events('{"city": ' + "[" * depth + "]" * depth + "}"):
            assembler.feed(event)


def test_streamed_tool_input_at_the_limit_is_read():
    assembler = StreamAssembler()
    for event in tool_block_events('{"city": ' + "[" * 63 + "]" * 63 + "}"):
        assembler.feed(event)
    assert assembler.response().content[0].input["city"] == json.loads("[" * 63 + "]" * 63)


def test_a_deep_stream_event_is_a_response_error_not_a_recursion_error():
    with pytest.raises(LLMResponseError, match="EUNICE_JSON_MAX_DEPTH"):
        SSEBuffer().push(b"data: " + b"[" * DEPTH + b"]" * DEPTH + b"\n\n")


def test_the_offline_provider_answers_deep_slash_arguments_naming_the_limit():
    text = "/weather " + '{"city": ' + "[" * 15_000 + "]" * 15_000 + "}"
    reply = OfflineProvider().complete(
        LLMRequest(model="offline", system="", messages=[{"role": "user", "content": text}], max_tokens=100)
    )
    assert reply.stop_reason == "end_turn" and "EUNICE_JSON_MAX_DEPTH" in reply.content[0].text

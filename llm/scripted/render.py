"""A scripted turn as the Messages API would send it: SSE events or one message."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from llm.scripted.script import Turn

# Tool input JSON is streamed in pieces this long, so clients must assemble it.
JSON_CHUNK = 7


def signature_for(thinking: str) -> str:
    """The signature the server gives a thinking block (and checks when it comes back)."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def redacted_data(payload: str) -> str:
    """A redacted_thinking block's opaque data: ``payload`` with a checksum the server verifies."""
    return f"{payload}.{signature_for(payload)}"


def data_is_intact(data: str) -> bool:
    payload, _, checksum = data.rpartition(".")
    return bool(payload) and checksum == signature_for(payload)


def message_json(turn: Turn, *, model: str, message_id: str) -> dict[str, Any]:
    """The non-streaming response body for ``turn``."""
    content: list[dict[str, Any]] = []
    if turn.thinking:
        thinking = "".join(turn.thinking)
        content.append({"type": "thinking", "thinking": thinking, "signature": signature_for(thinking)})
    content += [{"type": "redacted_thinking", "data": redacted_data(p)} for p in turn.redacted_thinking]
    if turn.text:
        content.append({"type": "text", "text": "".join(turn.text)})
    for number, tool in enumerate(turn.tool_uses):
        content.append(_tool_block(tool, message_id, number, {} if tool.cut else tool.input))
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": turn.final_stop_reason,
        "stop_sequence": None,
        "usage": _usage(turn),
    }


def stream_events(turn: Turn, *, model: str, message_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(event name, data)`` pairs in the order the API streams them."""
    start = message_json(turn, model=model, message_id=message_id)
    start.update(content=[], stop_reason=None, usage={**_usage(turn), "output_tokens": 1})
    events = [("message_start", {"type": "message_start", "message": start}), ("ping", {"type": "ping"})]
    index = 0
    if turn.thinking:
        deltas = [{"type": "thinking_delta", "thinking": c} for c in turn.thinking]
        deltas.append({"type": "signature_delta", "signature": signature_for("".join(turn.thinking))})
        events += _block(index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        index += 1
    for payload in turn.redacted_thinking:  # arrives whole, with no deltas
        events += _block(index, {"type": "redacted_thinking", "data": redacted_data(payload)}, [])
        index += 1
    if turn.text:
        events += _block(index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": c} for c in turn.text])
        index += 1
    for number, tool in enumerate(turn.tool_uses):
        raw = json.dumps(tool.input) if tool.raw_input is None else tool.raw_input
        if tool.cut:  # the output limit arrived in the middle of the input
            raw = raw[: max(1, len(raw) // 2)]
        pieces = [raw[i : i + JSON_CHUNK] for i in range(0, len(raw), JSON_CHUNK)]
        events += _block(
            index,
            _tool_block(tool, message_id, number, {}),
            [{"type": "input_json_delta", "partial_json": p} for p in pieces],
        )
        index += 1
    if turn.stream_error is not None:
        return events + [("error", turn.stream_error.body())]
    delta = {"stop_reason": turn.final_stop_reason, "stop_sequence": None}
    usage = {"output_tokens": turn.usage.get("output_tokens", 0)}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    return events + [("message_stop", {"type": "message_stop"})]


def sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


#: What ends a body sent with chunked transfer encoding (the connection stays open).
LAST_CHUNK = b"0\r\n\r\n"


def http_chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a body sent with chunked transfer encoding."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def _block(index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
        *[("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _tool_block(tool: Any, message_id: str, number: int, tool_input: dict[str, Any]) -> dict[str, Any]:
    tool_id = tool.id or f"toolu_{message_id.removeprefix('msg_')}_{number}"
    return {"type": "tool_use", "id": tool_id, "name": tool.name, "input": tool_input}


def _usage(turn: Turn) -> dict[str, int]:
    return {
        "input_tokens": turn.usage.get("input_tokens", 0),
        "output_tokens": turn.usage.get("output_tokens", 0),
        "cache_creation_input_tokens": turn.usage.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": turn.usage.get("cache_read_input_tokens", 0),
    }

"""Messages API stream events and messages as our typed events and responses."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from eunice.jsonlimits import JSONTooDeep, check_depth, loads_bounded
from llm.cost import Usage
from llm.errors import LLMConnectionError, LLMResponseError
from llm.types import (
    ContentBlock,
    LLMResponse,
    MessageStop,
    RedactedThinkingBlock,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
)

# What an OpenAI-compatible stream's last `data: [DONE]` decodes to.
SSE_DONE: dict[str, Any] = {"object": "[DONE]"}
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def usage_from(raw: Any, base: Usage | None = None) -> Usage:
    """``Usage`` from a usage object of the stream (a dict) or of the SDK; fields it
    leaves out (or null) keep ``base``'s value."""
    read = raw.get if isinstance(raw, dict) else (lambda name: getattr(raw, name, None))
    values = {name: getattr(base or Usage(), name) for name in _USAGE_FIELDS}
    for name in _USAGE_FIELDS:
        value = read(name)
        if value is not None:
            values[name] = value
    return Usage(**values)


def response_from_message(message: Any) -> LLMResponse:
    """An ``LLMResponse`` from a non-streaming SDK ``Message``."""
    content: list[ContentBlock] = []
    for block in message.content:
        if block.type == "text":
            content.append(TextBlock(block.text))
        elif block.type == "thinking":
            content.append(ThinkingBlock(block.thinking, block.signature))
        elif block.type == "redacted_thinking":
            content.append(RedactedThinkingBlock(block.data))
        elif block.type == "tool_use":
            content.append(ToolUseBlock(block.id, block.name, _bounded_input(block.name, dict(block.input or {}))))
    return LLMResponse(
        content=tuple(content),
        stop_reason=message.stop_reason or "end_turn",
        usage=usage_from(message.usage),
        model=message.model,
        id=message.id,
    )


class StreamAssembler:
    """Turns Messages API stream events (decoded SSE ``data`` objects) into typed
    events and assembles the final response.

    It reads the JSON the API sent rather than the SDK's event models: building
    a pydantic model per event was a fifth of the server's CPU with hundreds of
    answers streaming (bench/turns.py). Raises LLMResponseError when a
    tool_use block's streamed input is not a JSON object (unless the answer
    stopped at ``max_tokens``: that call was cut off, and is reported in the
    response's ``cut_tool_uses`` instead), and (from ``finish``)
    LLMConnectionError when the stream ended before ``message_stop``.
    """

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._usage = Usage()
        self._id = ""
        self._model = ""
        self._stop_reason: str | None = None
        self.finished = False

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = event.get("type")
        if kind == "content_block_delta":  # nearly every event: the short way
            return self._on_content_block_delta(event)
        handler = getattr(self, f"_on_{kind}", None)
        return handler(event) if handler is not None else []

    def finish(self) -> None:
        if not self.finished:
            raise LLMConnectionError("The model's reply was cut off before it finished.")

    def _on_message_start(self, event: dict[str, Any]) -> list[StreamEvent]:
        message = event["message"]
        self._id, self._model = message.get("id", ""), message.get("model", "")
        self._usage = usage_from(message.get("usage"))
        return [UsageUpdate(self._usage)]

    def _on_content_block_start(self, event: dict[str, Any]) -> list[StreamEvent]:
        block, index = event["content_block"], event["index"]
        kind = block.get("type")
        if kind == "text":
            text = block.get("text") or ""
            self._blocks[index] = {"type": "text", "text": text}
            return [TextDelta(index, text)] if text else []
        if kind == "thinking":
            thinking = block.get("thinking") or ""
            self._blocks[index] = {"type": "thinking", "thinking": thinking, "signature": ""}
            return [ThinkingDelta(index, thinking)] if thinking else []
        if kind == "redacted_thinking":
            self._blocks[index] = {"type": "redacted_thinking", "data": block.get("data") or ""}
            return []
        if kind == "tool_use":
            self._blocks[index] = {"type": "tool_use", "id": block["id"], "name": block["name"], "json": ""}
            return [ToolUseStart(index, block["id"], block["name"])]
        return []  # server-side tool blocks etc.: not offered by our request layer

    def _on_content_block_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        index = event["index"]
        block, delta = self._blocks.get(index), event["delta"]
        if block is None:
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] += delta["text"]
            return [TextDelta(index, delta["text"])]
        if kind == "thinking_delta":
            block["thinking"] += delta["thinking"]
            return [ThinkingDelta(index, delta["thinking"])]
        if kind == "signature_delta":
            block["signature"] += delta["signature"]
        elif kind == "input_json_delta":
            block["json"] += delta["partial_json"]
            return [ToolUseInputDelta(index, delta["partial_json"])]
        return []

    def _on_content_block_stop(self, event: dict[str, Any]) -> list[StreamEvent]:
        block = self._blocks.get(event["index"])
        if block is None or block["type"] != "tool_use":
            return []
        try:
            block["input"] = _tool_input(block["name"], block["json"])
        except UnreadableToolInput as exc:
            # Judged at message_stop: a call cut off by max_tokens is not an error of the model's.
            block["broken"] = exc
            return []
        return [ToolUseStop(event["index"], block["id"], block["name"], block["input"])]

    def _on_message_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        self._stop_reason = (event.get("delta") or {}).get("stop_reason") or self._stop_reason
        self._usage = usage_from(event.get("usage"), self._usage)
        return [UsageUpdate(self._usage)]

    def _on_message_stop(self, event: dict[str, Any]) -> list[StreamEvent]:
        self.finished = True
        broken = [b["broken"] for b in self._blocks.values() if "broken" in b]
        if broken and self._stop_reason != "max_tokens":
            raise broken[0]
        return [MessageStop(self.response())]

    def _on_error(self, event: dict[str, Any]) -> list[StreamEvent]:
        error = event.get("error") or {}
        raise StreamError(str(error.get("type") or ""), str(error.get("message") or ""))

    def response(self) -> LLMResponse:
        content: list[ContentBlock] = []
        cut: list[str] = []
        for _, block in sorted(self._blocks.items()):
            if block["type"] == "text":
                content.append(TextBlock(block["text"]))
            elif block["type"] == "thinking":
                content.append(ThinkingBlock(block["thinking"], block["signature"]))
            elif block["type"] == "redacted_thinking":
                content.append(RedactedThinkingBlock(block["data"]))
            elif "broken" in block or "input" not in block:
                cut.append(block["name"])  # a call whose input never arrived whole
            else:
                content.append(ToolUseBlock(block["id"], block["name"], block["input"]))
        return LLMResponse(
            tuple(content), self._stop_reason or "end_turn", self._usage, self._model, self._id, tuple(cut)
        )


class UnreadableToolInput(LLMResponseError):
    """A tool call's streamed input is not JSON (a call cut off by max_tokens, or a broken model)."""


class StreamError(Exception):
    """An ``error`` event in the middle of a stream (the HTTP status was already 200)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


def sse_data(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON ``data`` of each server-sent event in a byte stream."""
    events = SSEBuffer()
    for chunk in chunks:
        yield from events.push(chunk)


class SSEBuffer:
    """Splits bytes into events at blank lines; keeps a partial event for the next push."""

    def __init__(self) -> None:
        self._pending = b""
        self._ended_on_cr = False  # the last read ended with a CR, already read as a line end

    def push(self, chunk: bytes) -> list[dict[str, Any]]:
        if self._ended_on_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split between two reads, not a second line end
        self._ended_on_cr = chunk.endswith(b"\r")
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *complete, self._pending = (self._pending + chunk).split(b"\n\n")
        out = []
        for event in complete:
            data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
            if data == [b"[DONE]"]:
                out.append(SSE_DONE)
            elif data:
                out.append(_json(b"\n".join(data)))
        return out


def _json(data: bytes) -> Any:
    """orjson (a fifth of json's cost for a delta event), or json for what orjson
    refuses and json reads (an escaped lone surrogate, NaN)."""
    try:
        return orjson.loads(data)  # refuses past 1024 levels itself, without recursing
    except orjson.JSONDecodeError:
        try:
            return loads_bounded(data, what="a stream event")
        except JSONTooDeep as exc:
            raise LLMResponseError(f"The model's stream is not accepted: {exc}.") from None


def _bounded_input(name: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` (tool input the SDK already parsed) if it is within the depth limit. Raises LLMResponseError."""
    try:
        check_depth(value, what=f"the input for tool {name!r}")
    except JSONTooDeep as exc:
        raise LLMResponseError(f"The model sent input that is not accepted: {exc}.") from None
    return value


def _tool_input(name: str, raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = loads_bounded(raw)
    except JSONTooDeep as exc:
        raise LLMResponseError(f"The model sent input for tool {name!r} that is not accepted: {exc}.") from None
    except json.JSONDecodeError as exc:
        raise UnreadableToolInput(f"The model sent unreadable input for tool {name!r} ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise LLMResponseError(f"The model sent tool {name!r} input that is not a JSON object.")
    return value

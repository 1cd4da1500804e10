"""Messages API stream events and messages as our typed events and responses."""

from __future__ import annotations

import json
from typing import Any

from conversations.llm.cost import Usage
from conversations.llm.errors import LLMConnectionError, LLMResponseError
from conversations.llm.types import (
    ContentBlock,
    LLMResponse,
    MessageStop,
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

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def usage_from(raw: Any, base: Usage | None = None) -> Usage:
    """``Usage`` from an SDK usage object; fields it leaves out (None) keep ``base``'s value."""
    values = {name: getattr(base or Usage(), name) for name in _USAGE_FIELDS}
    for name in _USAGE_FIELDS:
        value = getattr(raw, name, None)
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
        elif block.type == "tool_use":
            content.append(ToolUseBlock(block.id, block.name, dict(block.input or {})))
    return LLMResponse(
        content=tuple(content),
        stop_reason=message.stop_reason or "end_turn",
        usage=usage_from(message.usage),
        model=message.model,
        id=message.id,
    )


class StreamAssembler:
    """Turns raw stream events into typed events and assembles the final response.

    Raises LLMResponseError when a tool_use block's streamed input is not a
    JSON object, and (from ``finish``) LLMConnectionError when the stream
    ended before ``message_stop``.
    """

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._usage = Usage()
        self._id = ""
        self._model = ""
        self._stop_reason: str | None = None
        self.finished = False

    def feed(self, event: Any) -> list[StreamEvent]:
        handler = getattr(self, f"_on_{event.type}", None)
        return handler(event) if handler is not None else []

    def finish(self) -> None:
        if not self.finished:
            raise LLMConnectionError("The model's reply was cut off before it finished.")

    def _on_message_start(self, event: Any) -> list[StreamEvent]:
        self._id, self._model = event.message.id, event.message.model
        self._usage = usage_from(event.message.usage)
        return [UsageUpdate(self._usage)]

    def _on_content_block_start(self, event: Any) -> list[StreamEvent]:
        block, index = event.content_block, event.index
        if block.type == "text":
            self._blocks[index] = {"type": "text", "text": block.text or ""}
            return [TextDelta(index, block.text)] if block.text else []
        if block.type == "thinking":
            self._blocks[index] = {"type": "thinking", "thinking": block.thinking or "", "signature": ""}
            return [ThinkingDelta(index, block.thinking)] if block.thinking else []
        if block.type == "tool_use":
            self._blocks[index] = {"type": "tool_use", "id": block.id, "name": block.name, "json": ""}
            return [ToolUseStart(index, block.id, block.name)]
        return []  # server-side tool blocks etc.: not offered by our request layer

    def _on_content_block_delta(self, event: Any) -> list[StreamEvent]:
        block, delta, index = self._blocks.get(event.index), event.delta, event.index
        if block is None:
            return []
        if delta.type == "text_delta":
            block["text"] += delta.text
            return [TextDelta(index, delta.text)]
        if delta.type == "thinking_delta":
            block["thinking"] += delta.thinking
            return [ThinkingDelta(index, delta.thinking)]
        if delta.type == "signature_delta":
            block["signature"] += delta.signature
        elif delta.type == "input_json_delta":
            block["json"] += delta.partial_json
            return [ToolUseInputDelta(index, delta.partial_json)]
        return []

    def _on_content_block_stop(self, event: Any) -> list[StreamEvent]:
        block = self._blocks.get(event.index)
        if block is None or block["type"] != "tool_use":
            return []
        block["input"] = _tool_input(block["name"], block["json"])
        return [ToolUseStop(event.index, block["id"], block["name"], block["input"])]

    def _on_message_delta(self, event: Any) -> list[StreamEvent]:
        self._stop_reason = event.delta.stop_reason or self._stop_reason
        self._usage = usage_from(event.usage, self._usage)
        return [UsageUpdate(self._usage)]

    def _on_message_stop(self, event: Any) -> list[StreamEvent]:
        self.finished = True
        return [MessageStop(self.response())]

    def response(self) -> LLMResponse:
        content: list[ContentBlock] = []
        for _, block in sorted(self._blocks.items()):
            if block["type"] == "text":
                content.append(TextBlock(block["text"]))
            elif block["type"] == "thinking":
                content.append(ThinkingBlock(block["thinking"], block["signature"]))
            else:
                content.append(ToolUseBlock(block["id"], block["name"], block.get("input", {})))
        return LLMResponse(tuple(content), self._stop_reason or "end_turn", self._usage, self._model, self._id)


def _tool_input(name: str, raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LLMResponseError(f"The model sent unreadable input for tool {name!r} ({exc.msg}).") from None
    if not isinstance(value, dict):
        raise LLMResponseError(f"The model sent tool {name!r} input that is not a JSON object.")
    return value

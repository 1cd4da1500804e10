"""Chat Completions stream chunks and completions as our typed events and responses.

A chunk carries deltas of one choice: ``content`` (text), ``reasoning_content``
or ``reasoning`` (what vLLM, DeepSeek, Ollama and OpenRouter call the model's
thinking) and ``tool_calls``, each call keyed by its ``index`` so that
parallel calls may interleave; a call's ``arguments`` arrive as pieces of a
JSON string. ``finish_reason`` ends the choice; with
``stream_options.include_usage`` one more chunk (no choices) carries the
usage, and ``data: [DONE]`` ends the stream.

Our blocks are numbered in the order they first appear, so thinking, text
and each tool call are blocks as in the Messages API.
"""

from __future__ import annotations

from typing import Any

from llm.anthropic_stream import SSE_DONE, StreamError, UnreadableToolInput, _tool_input
from llm.cost import Usage
from llm.errors import LLMConnectionError, LLMResponseError
from llm.openai_request import ToolNames
from llm.types import (
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

# finish_reason → our stop reason (the Messages API's words, which the loop reads).
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_REASONING_KEYS = ("reasoning_content", "reasoning")


def usage_from_openai(raw: dict[str, Any] | None) -> Usage:
    """Our ``Usage`` (input excluding cached reads) from a Chat Completions usage object."""
    if not raw:
        return Usage()
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or 0)
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_input_tokens=cached,
    )


class ChatStreamAssembler:
    """Turns decoded Chat Completions chunks into typed events and the final response.

    Raises LLMResponseError for a tool call whose arguments are not a JSON object
    (unless the answer stopped at the length limit: then it is in ``cut_tool_uses``),
    StreamError for an ``error`` object in the stream, and (from ``end``)
    LLMConnectionError when the stream ended before its choice finished.
    """

    def __init__(self, names: ToolNames | None = None) -> None:
        self._names = names or ToolNames()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._text_index: int | None = None
        self._thinking_index: int | None = None
        self._calls: dict[int, int] = {}  # the API's tool call index → our block index
        self._usage = Usage()
        self._id = ""
        self._model = ""
        self._finish_reason: str | None = None
        self.finished = False

    def feed(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        if chunk is SSE_DONE:
            return self._stop()
        if chunk.get("error"):
            error = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
            raise StreamError(str(error.get("type") or error.get("code") or ""), str(error.get("message") or ""))
        self._id = self._id or str(chunk.get("id") or "")
        self._model = self._model or str(chunk.get("model") or "")
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) == 0:  # we ask for one choice
                events += self._on_delta(choice.get("delta") or {})
                if choice.get("finish_reason"):
                    events += self._on_finish(str(choice["finish_reason"]))
        if chunk.get("usage"):
            self._usage = usage_from_openai(chunk["usage"])
            events.append(UsageUpdate(self._usage))
        return events

    def end(self) -> list[StreamEvent]:
        """Called when the body ended: the final events of a stream that sent no ``[DONE]``."""
        if self.finished:
            return []
        if self._finish_reason is None:
            raise LLMConnectionError("The model's reply was cut off before it finished.")
        return self._stop()

    def _on_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        thinking = next((delta[key] for key in _REASONING_KEYS if delta.get(key)), None)
        if isinstance(thinking, str):
            if self._thinking_index is None:
                self._thinking_index = self._new_block({"type": "thinking", "thinking": ""})
            self._blocks[self._thinking_index]["thinking"] += thinking
            events.append(ThinkingDelta(self._thinking_index, thinking))
        text = delta.get("content")
        if isinstance(text, str) and text:
            if self._text_index is None:
                self._text_index = self._new_block({"type": "text", "text": ""})
            self._blocks[self._text_index]["text"] += text
            events.append(TextDelta(self._text_index, text))
        for call in delta.get("tool_calls") or ():
            events += self._on_tool_call(call)
        return events

    def _on_tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        function = call.get("function") or {}
        index = self._calls.get(call.get("index", 0))
        events: list[StreamEvent] = []
        if index is None:
            name = self._names.ours(str(function.get("name") or ""))
            call_id = str(call.get("id") or f"call_{self._id or 'stream'}_{len(self._calls)}")
            index = self._calls[call.get("index", 0)] = self._new_block(
                {"type": "tool_use", "id": call_id, "name": name, "json": ""}
            )
            events.append(ToolUseStart(index, call_id, name))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            self._blocks[index]["json"] += arguments
            events.append(ToolUseInputDelta(index, arguments))
        return events

    def _on_finish(self, reason: str) -> list[StreamEvent]:
        self._finish_reason = reason
        events: list[StreamEvent] = []
        for index in self._calls.values():
            block = self._blocks[index]
            try:
                block["input"] = self._names.input_for(block["name"], _tool_input(block["name"], block["json"]))
            except UnreadableToolInput as exc:
                block["broken"] = exc  # judged at the end: a call cut off by the length limit is not an error
                continue
            events.append(ToolUseStop(index, block["id"], block["name"], block["input"]))
        return events

    def _stop(self) -> list[StreamEvent]:
        if self._finish_reason is None:
            raise LLMConnectionError("The model's reply ended before it finished.")
        self.finished = True
        broken = [b["broken"] for b in self._blocks.values() if "broken" in b]
        if broken and self._finish_reason != "length":
            raise broken[0]
        return [MessageStop(self.response())]

    def _new_block(self, block: dict[str, Any]) -> int:
        index = len(self._blocks)
        self._blocks[index] = block
        return index

    def response(self) -> LLMResponse:
        content, cut = assembled(self._blocks)
        stop = STOP_REASONS.get(self._finish_reason or "", self._finish_reason or "end_turn")
        if stop == "end_turn" and any(isinstance(b, ToolUseBlock) for b in content):
            stop = "tool_use"  # servers (Ollama) that finish a tool-calling turn with "stop"
        return LLMResponse(content, stop, self._usage, self._model, self._id, cut)


def assembled(blocks: dict[int, dict[str, Any]]) -> tuple[tuple[ContentBlock, ...], tuple[str, ...]]:
    """The content of assembled ``blocks`` in order, and the names of the tool calls cut off
    before their input was whole (left out of the content)."""
    content: list[ContentBlock] = []
    cut: list[str] = []
    for _, block in sorted(blocks.items()):
        if block["type"] == "text":
            content.append(TextBlock(block["text"]))
        elif block["type"] == "thinking":
            content.append(ThinkingBlock(block["thinking"]))
        elif "input" not in block:
            cut.append(block["name"])
        else:
            content.append(ToolUseBlock(block["id"], block["name"], block["input"]))
    return tuple(content), tuple(cut)


def response_from_completion(body: dict[str, Any], names: ToolNames | None = None) -> LLMResponse:
    """An ``LLMResponse`` from a non-streaming Chat Completions body (a dict).

    Raises LLMResponseError when the body has no choice or a call's arguments are broken.
    """
    choices = body.get("choices") or []
    if not choices:
        raise LLMResponseError("The model provider sent a completion with no choices.")
    assembler = ChatStreamAssembler(names)
    message = dict(choices[0].get("message") or {})
    calls = [{**call, "index": n} for n, call in enumerate(message.pop("tool_calls", None) or [])]
    finish = choices[0].get("finish_reason") or "stop"
    choice = {"index": 0, "delta": {**message, "tool_calls": calls}, "finish_reason": finish}
    chunk = {"id": body.get("id"), "model": body.get("model"), "choices": [choice], "usage": body.get("usage")}
    assembler.feed(chunk)
    return assembler.feed(SSE_DONE)[-1].response  # type: ignore[union-attr]

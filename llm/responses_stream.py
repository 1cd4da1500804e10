"""Responses API stream events and response bodies as our typed events and responses.

Each streamed event names its ``type``. Output items (a ``message``, a
``function_call``, a ``reasoning`` summary, a hosted ``web_search_call``)
are announced by ``response.output_item.added`` and closed by
``response.output_item.done``, keyed by ``output_index``; text arrives as
``response.output_text.delta``, a call's arguments as
``response.function_call_arguments.delta`` and, whole, in its ``done`` item.
``response.completed`` (or ``response.incomplete`` at the token limit) ends
the stream with the whole response and its usage; ``response.failed`` and
``error`` are failures. A hosted web search is the provider's own work: its
``web_search_call`` items are passed over, never run as our tool calls, and
what it found is in the answer's text.
"""

from __future__ import annotations

from typing import Any

from llm.anthropic_stream import StreamError, UnreadableToolInput, _tool_input
from llm.cost import Usage
from llm.errors import LLMConnectionError
from llm.openai_request import ToolNames
from llm.openai_stream import assembled
from llm.types import (
    LLMResponse,
    MessageStop,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
)

# incomplete_details.reason → our stop reason.
INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_ENDS = ("response.completed", "response.incomplete")


def usage_from_responses(raw: dict[str, Any] | None) -> Usage:
    """Our ``Usage`` (input excluding cached reads) from a Responses usage object."""
    if not raw:
        return Usage()
    cached = int((raw.get("input_tokens_details") or {}).get("cached_tokens") or 0)
    return Usage(
        input_tokens=max(int(raw.get("input_tokens") or 0) - cached, 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_input_tokens=cached,
    )


class ResponsesStreamAssembler:
    """Turns decoded Responses API events into typed events and the final response.

    Raises LLMResponseError (from ``_tool_input``) for a call whose arguments are not
    a JSON object, unless the answer stopped at the token limit (then it is in
    ``cut_tool_uses``); StreamError for ``response.failed`` or ``error``; and (from
    ``end``) LLMConnectionError when the stream ended before the response did.
    """

    def __init__(self, names: ToolNames | None = None) -> None:
        self._names = names or ToolNames()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._by_output: dict[tuple[int, str], int] = {}  # (output_index, kind) → our block index
        self._usage = Usage()
        self._id = ""
        self._model = ""
        self._stop_reason: str | None = None
        self.finished = False

    def feed(self, event: dict[str, Any]) -> list[StreamEvent]:
        kind = str(event.get("type") or "")
        output = int(event.get("output_index") or 0)
        if kind == "response.output_text.delta":
            return self._text(output, str(event.get("delta") or ""))
        if kind in _THINKING_DELTAS:
            return self._thinking(output, str(event.get("delta") or ""))
        if kind == "response.function_call_arguments.delta":
            return self._arguments(output, str(event.get("delta") or ""))
        if kind == "response.output_item.added":
            return self._added(output, event.get("item") or {})
        if kind == "response.output_item.done":
            return self._done(output, event.get("item") or {})
        if kind in _ENDS:
            return self._end(event.get("response") or {})
        if kind == "response.failed":
            error = (event.get("response") or {}).get("error") or {}
            raise StreamError(str(error.get("code") or "server_error"), str(error.get("message") or ""))
        if kind == "error":
            raise StreamError(str(event.get("code") or "server_error"), str(event.get("message") or ""))
        if kind == "response.created":
            self._note(event.get("response") or {})
        return []  # in_progress, content_part, web_search_call progress, annotations …

    def end(self) -> list[StreamEvent]:
        """Called when the body ended: nothing more when the response ended, else an error."""
        if not self.finished:
            raise LLMConnectionError("The model's reply was cut off before it finished.")
        return []

    def _note(self, response: dict[str, Any]) -> None:
        self._id = self._id or str(response.get("id") or "")
        self._model = str(response.get("model") or self._model)

    def _block(self, output: int, kind: str, block: dict[str, Any]) -> tuple[int, bool]:
        index = self._by_output.get((output, kind))
        if index is not None:
            return index, False
        index = self._by_output[(output, kind)] = len(self._blocks)
        self._blocks[index] = block
        return index, True

    def _text(self, output: int, delta: str) -> list[StreamEvent]:
        if not delta:
            return []
        index, _ = self._block(output, "text", {"type": "text", "text": ""})
        self._blocks[index]["text"] += delta
        return [TextDelta(index, delta)]

    def _thinking(self, output: int, delta: str) -> list[StreamEvent]:
        if not delta:
            return []
        index, _ = self._block(output, "thinking", {"type": "thinking", "thinking": ""})
        self._blocks[index]["thinking"] += delta
        return [ThinkingDelta(index, delta)]

    def _added(self, output: int, item: dict[str, Any]) -> list[StreamEvent]:
        if item.get("type") != "function_call":
            return []
        name = self._names.ours(str(item.get("name") or ""))
        call_id = str(item.get("call_id") or item.get("id") or f"call_{self._id or 'stream'}_{output}")
        index, new = self._block(output, "call", {"type": "tool_use", "id": call_id, "name": name, "json": ""})
        return [ToolUseStart(index, call_id, name)] if new else []

    def _arguments(self, output: int, delta: str) -> list[StreamEvent]:
        index = self._by_output.get((output, "call"))
        if index is None or not delta:
            return []
        self._blocks[index]["json"] += delta
        return [ToolUseInputDelta(index, delta)]

    def _done(self, output: int, item: dict[str, Any]) -> list[StreamEvent]:
        if item.get("type") != "function_call":
            return []
        events = self._added(output, item)  # a body read whole announces a call only here
        index = self._by_output[(output, "call")]
        block = self._blocks[index]
        if isinstance(item.get("arguments"), str):
            block["json"] = item["arguments"]  # the whole arguments: they win over the pieces
        try:
            block["input"] = self._names.input_for(block["name"], _tool_input(block["name"], block["json"]))
        except UnreadableToolInput as exc:
            block["broken"] = exc  # judged at the end: a call cut off by the token limit is not an error
            return events
        return [*events, ToolUseStop(index, block["id"], block["name"], block["input"])]

    def _end(self, response: dict[str, Any]) -> list[StreamEvent]:
        self._note(response)
        self.finished = True
        reason = str((response.get("incomplete_details") or {}).get("reason") or "")
        has_calls = any("input" in b for b in self._blocks.values() if b["type"] == "tool_use")
        self._stop_reason = INCOMPLETE.get(reason, reason) if reason else "tool_use" if has_calls else "end_turn"
        broken = [b["broken"] for b in self._blocks.values() if "broken" in b]
        if broken and self._stop_reason != "max_tokens":
            raise broken[0]
        self._usage = usage_from_responses(response.get("usage"))
        return [UsageUpdate(self._usage), MessageStop(self.response())]

    def response(self) -> LLMResponse:
        content, cut = assembled(self._blocks)
        return LLMResponse(content, self._stop_reason or "end_turn", self._usage, self._model, self._id, cut)


def response_from_body(body: dict[str, Any], names: ToolNames | None = None) -> LLMResponse:
    """An ``LLMResponse`` from a non-streaming Responses body (a dict), read as the events
    that would have streamed it. Raises LLMResponseError for a call's broken arguments."""
    assembler = ResponsesStreamAssembler(names)
    for output, item in enumerate(body.get("output") or []):
        assembler.feed({"type": "response.output_item.added", "output_index": output, "item": item})
        for part in item.get("content") or [] if item.get("type") == "message" else []:
            if part.get("type") == "output_text":
                assembler.feed({"type": "response.output_text.delta", "output_index": output, "delta": part["text"]})
        for part in item.get("summary") or [] if item.get("type") == "reasoning" else []:
            delta = {"type": "response.reasoning_summary_text.delta", "output_index": output, "delta": part.get("text")}
            assembler.feed(delta)
        assembler.feed({"type": "response.output_item.done", "output_index": output, "item": item})
    ending = "response.incomplete" if body.get("status") == "incomplete" else "response.completed"
    return assembler.feed({"type": ending, "response": body})[-1].response  # type: ignore[union-attr]

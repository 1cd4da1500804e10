"""OfflineProvider: the embedded default when no model is configured.

It never calls a model. It says plainly that none is configured and how to
set one, and it turns a slash command into a tool call, so every tool can
still be run through the one dispatch path.

Slash-command grammar (the whole text of the latest user message, ignoring a
trailing [CURRENT_STATE] block)::

    /TOOL_NAME                 call TOOL_NAME with {}
    /TOOL_NAME {JSON object}   call TOOL_NAME with that object

TOOL_NAME is 1–128 of ``A-Z a-z 0-9 _ -`` (the Messages API's rule for tool
names). Whitespace around the parts is ignored and the JSON may span lines.
Invalid JSON, or JSON that is not an object, gets a reply that names the
problem and shows an example; no tool runs. After a tool ran, the reply is
the tool's result, and the turn ends: as written for a model, or as its caller's
``present(tool name, content)`` puts it for a person (the chat loop gives it
``conversations.presenting.for_person``).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from llm.cost import Usage
from llm.provider import events_for
from llm.types import (
    CURRENT_STATE_MARKER,
    LLMRequest,
    LLMResponse,
    StreamEvent,
    TextBlock,
    ToolUseBlock,
)

MODEL_NAME = "offline"
_COMMAND = re.compile(r"\A\s*/(?P<name>[A-Za-z0-9_-]{1,128})(?:\s+(?P<args>.*))?\Z", re.DOTALL)
_SETUP = (
    "To use a model, set ANTHROPIC_API_KEY in the environment (and ANTHROPIC_BASE_URL for "
    "a gateway or a local server), or add an active ModelConfig row for this role in the admin "
    "(Language models → Model configs)."
)


class OfflineProvider:
    """Explains itself and parses ``/tool {json}``; see the module docstring for the grammar."""

    # Its tool calls are commands the person typed, not a model's choice: the loop
    # runs them even when the tool is not on the mode's surface.
    runs_the_persons_commands = True

    name = "offline"

    def __init__(
        self,
        *,
        reason: str = "No language model is configured.",
        present: Callable[[str, str], str] | None = None,
    ) -> None:
        self.reason = reason
        self.present = present

    def complete(self, request: LLMRequest) -> LLMResponse:
        last = request.messages[-1] if request.messages else {"role": "user", "content": ""}
        results = [b for b in _blocks(last) if b.get("type") == "tool_result"]
        if last.get("role") == "user" and results:
            if self.present is None:
                return _reply("\n\n".join(_result_text(b) for b in results))
            names = _tool_names(request.messages[-2] if len(request.messages) > 1 else {})
            shown = [self.present(names.get(str(b.get("tool_use_id", "")), ""), _result_text(b)) for b in results]
            return _reply("\n\n".join(shown))
        return self._answer(_user_text(last), request.tools)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        return self.complete(request)

    def stream(self, request: LLMRequest) -> Iterator[StreamEvent]:
        return events_for(self.complete(request))

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        for event in events_for(self.complete(request)):
            yield event

    def _answer(self, text: str, tools: list[dict[str, Any]]) -> LLMResponse:
        command = slash_command(text)
        example = _example(tools)
        if command is None:
            return _reply(
                f"{self.reason} {_SETUP}\n\nMeanwhile you can run any tool yourself: "
                f"type /TOOL_NAME followed by its arguments as a JSON object, e.g. {example}"
            )
        name, raw = command
        try:
            inputs = loads_bounded(raw) if raw else {}
        except JSONTooDeep as exc:
            return _reply(
                f"The arguments of /{name} are not accepted: {exc}. Write a flatter JSON object, e.g. {example}"
            )
        except json.JSONDecodeError as exc:
            return _reply(
                f"The arguments of /{name} are not valid JSON ({exc.msg} at line {exc.lineno}, "
                f"column {exc.colno}). Write one JSON object after the tool name, e.g. {example}"
            )
        if not isinstance(inputs, dict):
            return _reply(f"The arguments of /{name} must be a JSON object in braces, e.g. {example}")
        block = ToolUseBlock(f"toolu_offline_{secrets.token_hex(8)}", name, inputs)
        return LLMResponse((block,), "tool_use", Usage(), MODEL_NAME)


def slash_command(text: str) -> tuple[str, str] | None:
    """``(tool name, raw arguments)`` when ``text`` is a slash command (see the module
    docstring), else None. The arguments are stripped and not parsed."""
    match = _COMMAND.match(text)
    return (match["name"], (match["args"] or "").strip()) if match else None


def _reply(text: str) -> LLMResponse:
    return LLMResponse((TextBlock(text),), "end_turn", Usage(), MODEL_NAME)


def _example(tools: list[dict[str, Any]]) -> str:
    names = [tool["name"] for tool in tools]
    if "search_tools" in names or not names:
        return '/search_tools {"query": "make a plan"}'
    return f"/{names[0]} {{}}"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content", [])
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _tool_names(message: dict[str, Any]) -> dict[str, str]:
    """Each tool call's id and tool name, in the assistant message that made them."""
    return {b.get("id", ""): b.get("name", "") for b in _blocks(message) if b.get("type") == "tool_use"}


def _user_text(message: dict[str, Any]) -> str:
    texts = [
        b.get("text", "")
        for b in _blocks(message)
        if b.get("type") == "text" and not b.get("text", "").lstrip().startswith(CURRENT_STATE_MARKER)
    ]
    return "\n".join(texts).strip()


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
    return str(content)

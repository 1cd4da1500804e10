"""A scripted OpenAI-compatible server: POST /v1/chat/completions from the same scripts.

A turn's text streams as ``content`` deltas, its thinking as
``reasoning_content`` (as vLLM and DeepSeek send it), its tool uses as
parallel ``tool_calls`` whose ``arguments`` arrive in pieces; with
``stream_options.include_usage`` a last chunk carries the usage, then
``data: [DONE]``. It enforces the rules of the API a client could break
(every tool call answered by a tool message, a tool message answering one,
arguments as a JSON string, tool names the API accepts), worded as the API
words them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llm.scripted.render import JSON_CHUNK
from llm.scripted.script import ScriptError, Turn
from llm.scripted.server import ScriptedMessagesServer

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
NAME_LIMIT = 64
MAX_STOP = 4
# Our stop reasons (the scripts') as finish_reason.
FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "refusal": "content_filter"}


class ScriptedChatCompletionsServer(ScriptedMessagesServer):
    """``ScriptedMessagesServer``'s behaviour (turns, recording, pauses, errors, keys)
    over the Chat Completions protocol. ``url`` is the API root to give the SDK as
    ``base_url`` (it ends in /v1)."""

    path = "/v1/chat/completions"
    id_prefix = "chatcmpl-scripted-"

    @property
    def url(self) -> str:
        return f"{super().url}/v1"

    def problems(self, body: dict[str, Any]) -> list[str]:
        return chat_problems(body)

    def misses(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        return chat_expectation_misses(turn, body)

    def error_body(self, error: ScriptError, api_key: str) -> dict[str, Any]:
        message = error.message.format(api_key=api_key) if "{api_key}" in error.message else error.message
        return {"error": {"message": message, "type": error.type, "param": None, "code": error.type}}

    def answer(self, turn: Turn, body: dict[str, Any], message_id: str) -> dict[str, Any]:
        return completion_json(turn, model=str(body.get("model", "")), completion_id=message_id)

    def stream_body(self, turn: Turn, body: dict[str, Any], message_id: str) -> list[bytes]:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = stream_chunks(turn, model=str(body.get("model", "")), completion_id=message_id, usage=include_usage)
        return [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks] + [b"data: [DONE]\n\n"]


# --- rendering ---------------------------------------------------------------


def completion_json(turn: Turn, *, model: str, completion_id: str) -> dict[str, Any]:
    """The non-streaming body for ``turn``."""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(turn.text) or None}
    if turn.thinking:
        message["reasoning_content"] = "".join(turn.thinking)
    calls = [_call(tool, completion_id, n) for n, tool in enumerate(turn.tool_uses)]
    for call, tool in zip(calls, turn.tool_uses, strict=True):
        call["function"]["arguments"] = arguments_json(tool)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(turn)}],
        "usage": usage_json(turn),
    }


def stream_chunks(turn: Turn, *, model: str, completion_id: str, usage: bool) -> list[dict[str, Any]]:
    """The chunks the API streams for ``turn``, in order (without the final [DONE])."""

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"reasoning_content": piece}) for piece in turn.thinking]
    chunks += [chunk({"content": piece}) for piece in turn.text]
    for number, tool in enumerate(turn.tool_uses):
        chunks.append(chunk({"tool_calls": [{"index": number, **_call(tool, completion_id, number)}]}))
        raw = arguments_json(tool)
        pieces = [raw[i : i + JSON_CHUNK] for i in range(0, len(raw), JSON_CHUNK)]
        chunks += [chunk({"tool_calls": [{"index": number, "function": {"arguments": p}}]}) for p in pieces]
    if turn.stream_error is not None:
        error = turn.stream_error
        return chunks + [{"error": {"message": error.message, "type": error.type, "code": error.type}}]
    chunks.append(chunk({}, _finish(turn)))
    if usage:
        chunks.append({**chunk(None), "usage": usage_json(turn)})
    return chunks


def openai_tokens(turn: Turn) -> tuple[int, int, int]:
    """The turn's (prompt, cached, output) tokens as the OpenAI APIs count them: the
    prompt includes the cached tokens (the Messages API counts them apart)."""
    cached = turn.usage.get("cache_read_input_tokens", 0)
    prompt = turn.usage.get("input_tokens", 0) + cached + turn.usage.get("cache_creation_input_tokens", 0)
    return prompt, cached, turn.usage.get("output_tokens", 0)


def usage_json(turn: Turn) -> dict[str, Any]:
    prompt, cached, completion = openai_tokens(turn)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _call(tool: Any, completion_id: str, number: int) -> dict[str, Any]:
    call_id = tool.id or f"call_{completion_id.rsplit('-', 1)[-1]}_{number}"
    return {"id": call_id, "type": "function", "function": {"name": tool.name, "arguments": ""}}


def arguments_json(tool: Any) -> str:
    raw = json.dumps(tool.input) if tool.raw_input is None else tool.raw_input
    return raw[: max(1, len(raw) // 2)] if tool.cut else raw


def _finish(turn: Turn) -> str:
    return FINISH_REASONS.get(turn.final_stop_reason, "stop")


# --- the API's rules -----------------------------------------------------------


def chat_problems(body: dict[str, Any]) -> list[str]:
    """Rules the real API enforces that a client bug would break, as the API words them."""
    problems = [f"Missing required parameter: '{key}'." for key in ("model", "messages") if key not in body]
    messages = body.get("messages")
    if "messages" in body and not messages:
        problems.append(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
        )
    if body.get("stream_options") is not None and not body.get("stream"):
        problems.append("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    if isinstance(body.get("stop"), list) and len(body["stop"]) > MAX_STOP:
        problems.append(f"Invalid 'stop': array too long. Expected an array with maximum length {MAX_STOP}.")
    for number, tool in enumerate(body.get("tools") or []):
        problems += name_problems(f"tools[{number}].function.name", str((tool.get("function") or {}).get("name", "")))
    return problems + _message_problems(messages or [])


def name_problems(where: str, name: str) -> list[str]:
    """What the OpenAI APIs say of a tool name they refuse, at ``where`` in the request."""
    problems = []
    if not NAME_PATTERN.match(name):
        problems.append(
            f"Invalid '{where}': string does not match pattern. Expected a string that matches the pattern "
            "'^[a-zA-Z0-9_-]+$'."
        )
    if len(name) > NAME_LIMIT:
        problems.append(
            f"Invalid '{where}': string too long. Expected a string with maximum length {NAME_LIMIT}, "
            f"but got a string with length {len(name)} instead."
        )
    return problems


def _message_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    pending: list[str] = []  # tool calls of the last assistant message not yet answered
    for position, message in enumerate(messages):
        role = message.get("role")
        if role not in _ROLES:
            problems.append(
                f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', "
                f"'tool', and 'developer'. (messages[{position}].role)"
            )
            continue
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                problems.append(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    f"with 'tool_calls'. (messages[{position}], tool_call_id {call_id!r})"
                )
            else:
                pending.remove(call_id)
            continue
        if pending:
            problems.append(_unanswered(pending))
            pending = []
        if role == "assistant":
            calls = message.get("tool_calls") or []
            for number, call in enumerate(calls):
                arguments = (call.get("function") or {}).get("arguments")
                if not isinstance(arguments, str):
                    problems.append(
                        f"Invalid type for 'messages[{position}].tool_calls[{number}].function.arguments': "
                        f"expected a string, but got {type(arguments).__name__} instead."
                    )
            pending = [str(call.get("id")) for call in calls]
            if message.get("content") is None and not calls:
                problems.append(f"Invalid value for 'messages[{position}].content': expected a string, got null.")
        elif not message.get("content"):
            problems.append(f"Invalid 'messages[{position}].content': empty content.")
    if pending:
        problems.append(_unanswered(pending))
    return problems


def _unanswered(pending: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}"
    )


def chat_expectation_misses(turn: Turn, body: dict[str, Any]) -> list[str]:
    """Each expectation of the turn the request does not meet, described."""
    expect = turn.expect
    if expect is None:
        return []
    messages = body.get("messages") or [{}]
    # The tool messages answering the last assistant message.
    last_assistant = max((n for n, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    answers = messages[last_assistant + 1 :] if last_assistant >= 0 else []
    results = "\n".join(content_text(m.get("content")) for m in answers if m.get("role") == "tool")
    users = [m for m in messages if m.get("role") == "user"]
    user_text = content_text(users[-1].get("content")) if users else ""
    system = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
    misses = []
    if expect.tool_result_contains is not None and expect.tool_result_contains not in results:
        misses.append(f"the tool messages do not contain {expect.tool_result_contains!r} (they read {results[:200]!r})")
    if expect.user_text_contains is not None and expect.user_text_contains not in user_text:
        misses.append(f"the last user message does not contain {expect.user_text_contains!r}")
    if expect.system_contains is not None and expect.system_contains not in system:
        misses.append(f"the system message does not contain {expect.system_contains!r}")
    missing = [name for name in expect.tools_include if name not in tools]
    if missing:
        misses.append(f"the tools array lacks {', '.join(missing)}")
    if expect.stream is not None and bool(body.get("stream")) != expect.stream:
        misses.append(f"expected stream={expect.stream}")
    last_role = messages[-1].get("role")
    if expect.last_role is not None and last_role != expect.last_role:
        misses.append(f"expected the last message to be the {expect.last_role}'s, not the {last_role}'s")
    return misses


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and p.get("type") == "text")

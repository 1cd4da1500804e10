"""A scripted Responses API server: POST /v1/responses from the same scripts.

A turn streams as the API streams: ``response.created``; then output items,
each announced and closed (``response.output_item.added`` / ``.done``):
thinking as a ``reasoning`` item's summary, each of the turn's
``web_searches`` as a hosted ``web_search_call``, text as a ``message``
(``response.output_text.delta`` pieces, its sources as ``url_citation``
annotations), each tool use as a ``function_call`` whose arguments arrive in
pieces; last ``response.completed`` (``response.incomplete`` at the token
limit) with the whole response and its usage. It enforces the API's rules a
client could break (parameters the API moved or lacks, tool names, strict
schemas, every call answered by its output and every output answering a
call), worded as the API words them, and refuses a turn that searches the
web when the request offers no ``web_search`` tool.
"""

from __future__ import annotations

import json
from typing import Any

from llm.scripted.chat import (
    ScriptedChatCompletionsServer,
    arguments_json,
    content_text,
    name_problems,
    openai_tokens,
)
from llm.scripted.render import JSON_CHUNK
from llm.scripted.script import ToolUse, Turn

TOOL_TYPES = ("function", "web_search", "web_search_preview", "file_search", "code_interpreter")
# Chat Completions parameters the Responses API refuses, and what it says instead.
MOVED = {
    "max_tokens": "Unsupported parameter: 'max_tokens'. In the Responses API, this parameter has moved to "
    "'max_output_tokens'.",
    "messages": "Unknown parameter: 'messages'.",
    "stop": "Unknown parameter: 'stop'.",
}


class ScriptedResponsesServer(ScriptedChatCompletionsServer):
    """``ScriptedMessagesServer``'s behaviour over the Responses API; its ``url`` and error
    bodies are the Chat Completions server's (the API root ending in /v1, OpenAI's errors)."""

    path = "/v1/responses"
    id_prefix = "resp_scripted_"

    def problems(self, body: dict[str, Any]) -> list[str]:
        return responses_problems(body)

    def misses(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        return responses_expectation_misses(turn, body)

    def answer(self, turn: Turn, body: dict[str, Any], message_id: str) -> dict[str, Any]:
        return response_json(turn, model=str(body.get("model", "")), response_id=message_id)

    def stream_body(self, turn: Turn, body: dict[str, Any], message_id: str) -> list[bytes]:
        events = stream_events(turn, model=str(body.get("model", "")), response_id=message_id)
        return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


# --- rendering ---------------------------------------------------------------


def response_json(turn: Turn, *, model: str, response_id: str) -> dict[str, Any]:
    """The whole response for ``turn`` (the non-streaming body, and the stream's last event's)."""
    cut = turn.final_stop_reason == "max_tokens"
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "model": model,
        "output": [item for item, _ in _items(turn, response_id)],
        "usage": usage_json(turn),
    }


def stream_events(turn: Turn, *, model: str, response_id: str) -> list[dict[str, Any]]:
    """The events the API streams for ``turn``, in order."""
    whole = response_json(turn, model=model, response_id=response_id)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**whole, "status": "in_progress", "output": [], "usage": None}}
    ]
    for output, (item, pieces) in enumerate(_items(turn, response_id)):
        opened = {**item, "status": "in_progress"}
        for key, empty in (("content", []), ("summary", []), ("arguments", "")):
            if key in item:
                opened[key] = empty
        events.append({"type": "response.output_item.added", "output_index": output, "item": opened})
        events += [{**piece, "item_id": item["id"], "output_index": output} for piece in pieces]
        events.append({"type": "response.output_item.done", "output_index": output, "item": item})
    if turn.stream_error is not None:
        error = turn.stream_error
        return [*events, {"type": "error", "code": error.type, "message": error.message, "param": None}]
    ending = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
    return [*events, {"type": ending, "response": whole}]


def _items(turn: Turn, response_id: str) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each output item of ``turn`` with the delta events that stream it."""
    number = response_id.rsplit("_", 1)[-1]
    items: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if turn.thinking:
        summary = [{"type": "summary_text", "text": "".join(turn.thinking)}]
        deltas: list[dict[str, Any]] = [
            {"type": "response.reasoning_summary_text.delta", "delta": piece} for piece in turn.thinking
        ]
        items.append(({"type": "reasoning", "id": f"rs_{number}", "summary": summary}, deltas))
    for n, query in enumerate(turn.web_searches):
        search = {"type": "web_search_call", "id": f"ws_{number}_{n}", "status": "completed"}
        progress = [{"type": f"response.web_search_call.{step}"} for step in ("in_progress", "searching", "completed")]
        items.append(({**search, "action": {"type": "search", "query": query}}, progress))
    if turn.text:
        text = "".join(turn.text)
        citations = [_citation(query, len(text)) for query in turn.web_searches]
        part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": citations}
        message = {"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed"}
        deltas = [{"type": "response.output_text.delta", "content_index": 0, "delta": piece} for piece in turn.text]
        items.append(({**message, "content": [part]}, deltas))
    for n, tool in enumerate(turn.tool_uses):
        items.append(_function_call(tool, f"fc_{number}_{n}", tool.id or f"call_{number}_{n}"))
    return items


def _function_call(tool: ToolUse, item_id: str, call_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    raw = arguments_json(tool)
    pieces = [raw[i : i + JSON_CHUNK] for i in range(0, len(raw), JSON_CHUNK)]
    deltas = [{"type": "response.function_call_arguments.delta", "delta": piece} for piece in pieces]
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": tool.name, "arguments": raw}
    return {**item, "status": "incomplete" if tool.cut else "completed"}, deltas


def _citation(query: str, end: int) -> dict[str, Any]:
    slug = "-".join(query.lower().split())[:40]
    return {
        "type": "url_citation",
        "url": f"https://search.example/{slug}",
        "title": query,
        "start_index": 0,
        "end_index": end,
    }


def usage_json(turn: Turn) -> dict[str, Any]:
    prompt, cached, output = openai_tokens(turn)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


# --- the API's rules -----------------------------------------------------------


def responses_problems(body: dict[str, Any]) -> list[str]:
    """Rules the real API enforces that a client bug would break, as the API words them."""
    problems = [f"Missing required parameter: '{key}'." for key in ("model", "input") if key not in body]
    problems += [message for key, message in MOVED.items() if key in body]
    if body.get("stream_options") is not None and not body.get("stream"):
        problems.append("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
    for number, tool in enumerate(body.get("tools") or []):
        problems += _tool_problems(number, tool)
    items = body.get("input")
    return problems + (_input_problems(items) if isinstance(items, list) else [])


def _tool_problems(number: int, tool: dict[str, Any]) -> list[str]:
    kind = tool.get("type")
    if kind not in TOOL_TYPES:
        supported = ", ".join(f"'{t}'" for t in TOOL_TYPES)
        return [f"Invalid value: '{kind}'. Supported values are: {supported}. (tools[{number}].type)"]
    if kind != "function":
        return []
    name = str(tool.get("name", ""))
    problems = name_problems(f"tools[{number}].name", name)
    if tool.get("strict", True):  # the API's default: strict
        problems += [f"Invalid schema for function '{name}': {p}" for p in strict_problems(tool.get("parameters"))]
    return problems


# The string formats the API's strict mode permits (its own list: the client's is not trusted).
API_STRICT_FORMATS = ("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid")


def strict_problems(schema: Any, context: tuple[str, ...] = ()) -> list[str]:
    """What strict mode refuses in ``schema``: an object not closed, a property not required,
    a string format it does not know."""
    if not isinstance(schema, dict):
        return []
    where = f"In context=({', '.join(repr(c) for c in context)})"
    problems = []
    if "format" in schema and schema["format"] not in API_STRICT_FORMATS:
        problems.append(f"{where}, 'format' {schema['format']!r} is not permitted.")
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where}, 'additionalProperties' is required to be supplied and to be false.")
        missing = [key for key in properties if key not in (schema.get("required") or [])]
        if missing:
            problems.append(
                f"{where}, 'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'."
            )
        for key, sub in properties.items():
            problems += strict_problems(sub, (*context, "properties", key))
    if isinstance(schema.get("items"), dict):
        problems += strict_problems(schema["items"], (*context, "items"))
    for n, sub in enumerate(schema.get("anyOf") or []):
        problems += strict_problems(sub, (*context, "anyOf", str(n)))
    return problems


def _input_problems(items: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    calls: set[str] = set()
    pending: list[str] = []  # calls not yet answered
    for position, item in enumerate(items):
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "function_call":
            if not isinstance(item.get("arguments"), str):
                problems.append(f"Invalid type for 'input[{position}].arguments': expected a string.")
            calls.add(str(item.get("call_id")))
            pending.append(str(item.get("call_id")))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in calls:
                problems.append(f"No tool call found for function call output with call_id {call_id}.")
            elif call_id in pending:
                pending.remove(call_id)
        elif kind == "message":
            if pending:
                problems.append(f"No tool output found for function call {pending[0]}.")
                pending = []
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                problems.append(f"Invalid value: '{item.get('role')}'. (input[{position}].role)")
            if not item.get("content"):
                problems.append(f"Invalid 'input[{position}].content': empty content.")
        else:
            problems.append(f"Invalid value: '{kind}'. (input[{position}].type)")
    if pending:
        problems.append(f"No tool output found for function call {pending[0]}.")
    return problems


def responses_expectation_misses(turn: Turn, body: dict[str, Any]) -> list[str]:
    """Each expectation of the turn the request does not meet, described; and a turn that
    searches the web natively when the request offers no web_search tool."""
    tools = body.get("tools") or []
    offered = {t.get("name") if t.get("type") == "function" else t.get("type") for t in tools}
    misses = []
    if turn.web_searches and not offered & {"web_search", "web_search_preview"}:
        misses.append("the turn searches the web natively, but the request offers no web_search tool")
    expect = turn.expect
    if expect is None:
        return misses
    items = body.get("input") or [{}]
    last_call = max((n for n, i in enumerate(items) if i.get("type") == "function_call"), default=-1)
    results = "\n".join(
        str(i.get("output", "")) for i in items[last_call + 1 :] if i.get("type") == "function_call_output"
    )
    users = [i for i in items if i.get("role") == "user"]
    user_text = _text(users[-1].get("content")) if users else ""
    if expect.tool_result_contains is not None and expect.tool_result_contains not in results:
        misses.append(
            f"the function call outputs do not contain {expect.tool_result_contains!r} (they read {results[:200]!r})"
        )
    if expect.user_text_contains is not None and expect.user_text_contains not in user_text:
        misses.append(f"the last user message does not contain {expect.user_text_contains!r}")
    if expect.system_contains is not None and expect.system_contains not in str(body.get("instructions", "")):
        misses.append(f"the instructions do not contain {expect.system_contains!r}")
    missing = [name for name in expect.tools_include if name not in offered]
    if missing:
        misses.append(f"the tools array lacks {', '.join(missing)}")
    if expect.stream is not None and bool(body.get("stream")) != expect.stream:
        misses.append(f"expected stream={expect.stream}")
    last = items[-1]
    last_role = last.get("role") or ("user" if last.get("type") == "function_call_output" else "assistant")
    if expect.last_role is not None and last_role != expect.last_role:
        misses.append(f"expected the last input item to be the {expect.last_role}'s, not the {last_role}'s")
    return misses


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p)
    return content_text(content)

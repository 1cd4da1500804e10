"""A script: the turns the scripted server answers with, one per request, in order.

A script file is JSON: ``{"turns": [TURN, ...]}`` (or just the list), where
a TURN is an object with any of these keys::

    text          "Hello" or ["Hel", "lo"]          text chunks, streamed as text_delta
    thinking      "..." or ["...", "..."]           thinking chunks, before the text
                  (signed: the server refuses the block back changed)
    redacted_thinking  ["opaque", ...]              redacted_thinking blocks, after thinking
    tool_uses     [{"name": "plan", "input": {...}, "id": "toolu_1"?, "cut": false, "raw_input": "..."?}]
                  "cut": true streams only the first half of the input JSON and
                  stops the turn at max_tokens, as the API does when a call
                  reaches the output limit; "raw_input" is streamed verbatim as
                  the input's JSON (malformed on purpose)
    web_searches  ["query", ...]                     hosted web searches the model runs before
                  it answers (the Responses API server only; it refuses a turn
                  that searches when the request offers no web_search tool)
    stop_reason   default: "max_tokens" with a cut tool use, "tool_use" with
                  tool_uses, else "end_turn" (also "max_tokens", "refusal",
                  "pause_turn", "stop_sequence")
    usage         {"input_tokens", "output_tokens", "cache_read_input_tokens",
                   "cache_creation_input_tokens"}
    delay         seconds between streamed events (demos; tests leave it 0)
    pause_after   stream this many events, then wait for server.resume()
    error         {"status": 529, "type": "overloaded_error", "message": "...",
                   "headers": {...}}  answer with this HTTP error instead
    stream_error  the same shape, sent as an SSE `error` event after the content
    expect        {"tool_result_contains", "user_text_contains", "system_contains",
                   "tools_include": [...], "stream": true|false,
                   "thinking_budget_tokens": N, "last_role": "user"|"assistant"}
                  checked against the request; a miss is answered with a 400
                  and recorded in server.failures
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    cut: bool = False
    raw_input: str | None = None


@dataclass(frozen=True)
class ScriptError:
    status: int
    type: str
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    def body(self, **values: str) -> dict[str, Any]:
        message = self.message.format(**values) if values else self.message
        return {"type": "error", "error": {"type": self.type, "message": message}}


@dataclass(frozen=True)
class Expect:
    tool_result_contains: str | None = None
    user_text_contains: str | None = None
    system_contains: str | None = None
    tools_include: tuple[str, ...] = ()
    stream: bool | None = None
    thinking_budget_tokens: int | None = None
    last_role: str | None = None


@dataclass(frozen=True)
class Turn:
    text: tuple[str, ...] = ()
    thinking: tuple[str, ...] = ()
    redacted_thinking: tuple[str, ...] = ()
    tool_uses: tuple[ToolUse, ...] = ()
    # Queries the model searches the web for natively, before it answers (the Responses API's
    # hosted web_search); the other APIs have no such tool and leave them out.
    web_searches: tuple[str, ...] = ()
    stop_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    delay: float = 0.0
    pause_after: int | None = None
    error: ScriptError | None = None
    stream_error: ScriptError | None = None
    expect: Expect | None = None

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        if any(tool.cut for tool in self.tool_uses):
            return "max_tokens"
        return "tool_use" if self.tool_uses else "end_turn"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        """A Turn from its JSON form. Raises ValueError naming an unknown key."""
        _check_keys(cls, data, "turn")
        values = dict(data)
        for key in ("text", "thinking", "redacted_thinking", "web_searches"):
            if isinstance(values.get(key), str):
                values[key] = [values[key]]
            values[key] = tuple(values.get(key, ()))
        values["tool_uses"] = tuple(_build(ToolUse, t, "tool use") for t in values.get("tool_uses", ()))
        for key in ("error", "stream_error"):
            if values.get(key) is not None:
                values[key] = _build(ScriptError, values[key], key)
        if values.get("expect") is not None:
            expect = dict(values["expect"])
            expect["tools_include"] = tuple(expect.get("tools_include", ()))
            values["expect"] = _build(Expect, expect, "expect")
        return cls(**values)


def load_script(source: str | Path | list | dict) -> list[Turn]:
    """Turns from a script file path, or its already-parsed JSON. Raises ValueError on a bad script."""
    data = json.loads(Path(source).read_text()) if isinstance(source, (str, Path)) else source
    turns = data.get("turns") if isinstance(data, dict) else data
    if not isinstance(turns, list) or not turns:
        raise ValueError('a script is {"turns": [...]} with at least one turn')
    return [t if isinstance(t, Turn) else Turn.from_dict(t) for t in turns]


def _build(kind: type, data: Any, what: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"a {what} must be a JSON object, not {data!r}")
    _check_keys(kind, data, what)
    return kind(**data)


def _check_keys(kind: type, data: dict[str, Any], what: str) -> None:
    known = {f.name for f in fields(kind)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {what} key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")

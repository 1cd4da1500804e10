"""An LLMRequest as Chat Completions parameters.

Our history uses the Messages API shapes (llm/types.py); Chat Completions
wants a system message first, an assistant message's tool calls as
``tool_calls`` with their arguments as a JSON string, and each tool result as
its own ``tool`` message right after the assistant message that called it.
Thinking blocks are not sent back: the Chat Completions servers that stream
reasoning (DeepSeek, vLLM, OpenRouter) do not take it as input.

Tool names: the API enforces ``^[a-zA-Z0-9_-]{1,64}$``; the Messages API
allows 128 characters. A longer (or otherwise invalid) name goes on the wire
as a valid one (its allowed characters, cut, with a hash of the whole name),
and ``ToolNames`` turns the model's calls back into our names.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from llm.types import LLMRequest

NAME_LIMIT = 64
_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_STOP_SEQUENCES = 4  # the API refuses more


def wire_name(name: str) -> str:
    """``name`` as the API accepts it: itself when valid, else a valid name unique to it."""
    if _VALID_NAME.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{_INVALID_CHARS.sub('_', name)[: NAME_LIMIT - 9]}_{digest}"


@dataclass
class ToolNames:
    """Wire name → our name, for the names that had to change."""

    renamed: dict[str, str] = field(default_factory=dict)

    def wire(self, name: str) -> str:
        sent = wire_name(name)
        if sent != name:
            self.renamed[sent] = name
        return sent

    def ours(self, sent: str) -> str:
        return self.renamed.get(sent, sent)


def build_chat_params(request: LLMRequest, *, stream: bool) -> tuple[dict[str, Any], ToolNames]:
    """Keyword arguments for ``client.chat.completions.create``, and the tool names it renamed."""
    names = ToolNames()
    messages: list[dict[str, Any]] = []
    system = _text(request.system)
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        messages += _messages(message, names)
    params: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens, "messages": messages}
    if request.tools:
        params["tools"] = [_tool(tool, names) for tool in request.tools]
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.stop_sequences:
        params["stop"] = list(request.stop_sequences[:MAX_STOP_SEQUENCES])
    if request.metadata_user_id:
        params["user"] = request.metadata_user_id
    if stream:
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}  # usage arrives in the last chunk
    return params, names


def _tool(tool: dict[str, Any], names: ToolNames) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": names.wire(tool["name"]),
        "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
    }
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _messages(message: dict[str, Any], names: ToolNames) -> list[dict[str, Any]]:
    blocks = _blocks(message.get("content", []))
    if message.get("role") == "assistant":
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [_tool_call(b, names) for b in blocks if b.get("type") == "tool_use"]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        return [out] if text or calls else []
    # A user message: its tool results first (each answers the assistant message before it), then the rest.
    results = [
        {"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": _result_text(b)}
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    parts = [part for b in blocks if (part := _user_part(b)) is not None]
    if parts and all(p["type"] == "text" for p in parts):
        return [*results, {"role": "user", "content": "\n\n".join(p["text"] for p in parts)}]
    return [*results, {"role": "user", "content": parts}] if parts else results


def _tool_call(block: dict[str, Any], names: ToolNames) -> dict[str, Any]:
    return {
        "id": block["id"],
        "type": "function",
        "function": {"name": names.wire(block["name"]), "arguments": orjson.dumps(block.get("input") or {}).decode()},
    }


def _user_part(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "text" and block.get("text"):
        return {"type": "text", "text": block["text"]}
    source = block.get("source") or {}
    if block.get("type") == "image" and source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
        return {"type": "image_url", "image_url": {"url": url}}
    return None


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    text = content if isinstance(content, str) else _text(content)
    return f"Error: {text}" if block.get("is_error") else text


def _text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(b.get("text", "") for b in content if b.get("type") == "text" and b.get("text"))


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)

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

Strict mode (``strict_schema``): with the ``strict_tools`` capability a tool
whose schema strict mode can express is sent strict, so the model's arguments
always match it. Strict mode wants every object closed and every property
required; a property our schema leaves optional (the registry's injected
``reasoning`` is required, most others are not) is sent as "this, or null",
and ``ToolNames.input_for`` drops those nulls from the model's arguments, so
the tool sees them absent, as its own schema has them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from llm.capabilities import STRICT_TOOLS
from llm.types import LLMRequest

# Hosts whose Chat Completions take the token limit as ``max_completion_tokens``: their reasoning
# models (o-series, gpt-5) refuse ``max_tokens``. Other servers (Ollama, llama.cpp, …) know only
# ``max_tokens``. No base_url is OpenAI's own endpoint.
_COMPLETION_TOKENS_HOSTS = ("api.openai.com", ".openai.azure.com", ".cognitiveservices.azure.com")
NAME_LIMIT = 64
_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
MAX_STOP_SEQUENCES = 4  # the API refuses more
# What strict mode accepts (OpenAI's structured outputs); a schema with another keyword is sent not strict.
_STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
        "description", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "minLength", "maxLength", "$defs", "$ref",
    }
)  # fmt: skip
# The string formats strict mode knows; another (an MCP tool's "uri") makes the API refuse the request.
STRICT_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
# Left out of a strict schema: annotations, and defaults (the dispatcher fills those in).
_DROPPED_KEYWORDS = frozenset({"default", "examples", "writeOnly", "readOnly", "$schema"})


def wire_name(name: str) -> str:
    """``name`` as the API accepts it: itself when valid, else a valid name unique to it."""
    if _VALID_NAME.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{_INVALID_CHARS.sub('_', name)[: NAME_LIMIT - 9]}_{digest}"


@dataclass
class ToolNames:
    """Wire name → our name, for the names that had to change; and our schema of each tool
    sent strict, to take the nulls strict mode added out of its arguments."""

    renamed: dict[str, str] = field(default_factory=dict)
    loosened: dict[str, dict[str, Any]] = field(default_factory=dict)

    def wire(self, name: str) -> str:
        sent = wire_name(name)
        if sent != name:
            self.renamed[sent] = name
        return sent

    def ours(self, sent: str) -> str:
        return self.renamed.get(sent, sent)

    def input_for(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The model's ``arguments`` to tool ``name`` (ours) as our schema has them."""
        schema = self.loosened.get(name)
        return arguments if schema is None else without_added_nulls(arguments, schema)

    def parameters(self, tool: dict[str, Any], *, strict: bool) -> tuple[dict[str, Any], bool]:
        """``tool``'s parameters as sent, and whether they are strict (when asked and possible)."""
        schema = tool.get("input_schema") or {"type": "object", "properties": {}}
        sent = strict_schema(schema) if strict else None
        if sent is None:
            return schema, False
        self.loosened[tool["name"]] = schema
        return sent, True


class _NotStrict(Exception):
    """A schema strict mode cannot express."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` as strict mode takes it, or None when it cannot (a keyword strict mode
    lacks, a string format it does not know, an object open to any property). Every object
    is closed and has every property required; a property ``schema`` leaves optional may be
    null instead."""
    if schema.get("type") != "object":
        return None
    try:
        return _strict({"properties": {}, **schema})
    except _NotStrict:
        return None


def _strict(node: Any) -> dict[str, Any]:
    if not isinstance(node, dict) or set(node) - _STRICT_KEYWORDS - _DROPPED_KEYWORDS:
        raise _NotStrict
    if "format" in node and node["format"] not in STRICT_FORMATS:
        raise _NotStrict
    out = {key: value for key, value in node.items() if key not in _DROPPED_KEYWORDS}
    if node.get("type") == "object" or "properties" in node:
        properties = node.get("properties")
        if not isinstance(properties, dict) or node.get("additionalProperties", False) is not False:
            raise _NotStrict  # an object open to properties of any name
        required = set(node.get("required") or ())
        out["properties"] = {
            name: _strict(sub) if name in required else _or_null(_strict(sub)) for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    if "items" in node:
        out["items"] = _strict(node["items"])
    if "anyOf" in node:
        out["anyOf"] = [_strict(sub) for sub in node["anyOf"]]
    if "$defs" in node:
        out["$defs"] = {name: _strict(sub) for name, sub in node["$defs"].items()}
    return out


def _or_null(node: dict[str, Any]) -> dict[str, Any]:
    kind = node.get("type")
    if isinstance(kind, str):
        node = {**node, "type": [kind, "null"]} if kind != "null" else node
    elif isinstance(kind, list):
        node = node if "null" in kind else {**node, "type": [*kind, "null"]}
    elif "anyOf" in node:
        node = {**node, "anyOf": [*node["anyOf"], {"type": "null"}]}
    else:
        return {"anyOf": [node, {"type": "null"}]}
    if isinstance(node.get("enum"), list) and None not in node["enum"]:
        node = {**node, "enum": [*node["enum"], None]}
    return node


def without_added_nulls(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` without the nulls given for properties ``schema`` leaves optional and never null."""
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        required = set(schema.get("required") or ())
        return {
            key: without_added_nulls(item, properties.get(key) or {})
            for key, item in value.items()
            if item is not None or key in required or _allows_null(properties.get(key) or {})
        }
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [without_added_nulls(item, items) for item in value]
    return value


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return (
        kind == "null"
        or (isinstance(kind, list) and "null" in kind)
        or None in (schema.get("enum") or ())
        or any(_allows_null(sub) for sub in schema.get("anyOf") or () if isinstance(sub, dict))
    )


def token_limit_parameter(base_url: str | None) -> str:
    """The name the server at ``base_url`` (None: OpenAI's) takes a request's token limit under."""
    host = (urlsplit(base_url).hostname or "") if base_url else "api.openai.com"
    official = any(host == suffix or host.endswith(suffix) for suffix in _COMPLETION_TOKENS_HOSTS)
    return "max_completion_tokens" if official else "max_tokens"


def build_chat_params(
    request: LLMRequest, *, stream: bool, token_limit: str = "max_tokens"
) -> tuple[dict[str, Any], ToolNames]:
    """Keyword arguments for ``client.chat.completions.create``, and the tool names it renamed;
    the token limit goes under ``token_limit`` (``token_limit_parameter``)."""
    names = ToolNames()
    messages: list[dict[str, Any]] = []
    system = text_of(request.system)
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        messages += _messages(message, names)
    params: dict[str, Any] = {"model": request.model, token_limit: request.max_tokens, "messages": messages}
    if request.tools:
        strict = STRICT_TOOLS in request.capabilities
        params["tools"] = [_tool(tool, names, strict=strict) for tool in request.tools]
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


def _tool(tool: dict[str, Any], names: ToolNames, *, strict: bool) -> dict[str, Any]:
    parameters, strict = names.parameters(tool, strict=strict)
    function: dict[str, Any] = {"name": names.wire(tool["name"]), "parameters": parameters}
    if tool.get("description"):
        function["description"] = tool["description"]
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _messages(message: dict[str, Any], names: ToolNames) -> list[dict[str, Any]]:
    blocks = blocks_of(message.get("content", []))
    if message.get("role") == "assistant":
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        calls = [_tool_call(b, names) for b in blocks if b.get("type") == "tool_use"]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        return [out] if text or calls else []
    # A user message: its tool results first (each answers the assistant message before it), then the rest.
    results = [
        {"role": "tool", "tool_call_id": b.get("tool_use_id", ""), "content": result_text(b)}
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
    url = image_url(block)
    return {"type": "image_url", "image_url": {"url": url}} if url else None


def image_url(block: dict[str, Any]) -> str | None:
    """An image block's picture as a data URL (what the OpenAI APIs take), or None."""
    source = block.get("source") or {}
    if block.get("type") != "image" or source.get("type") != "base64":
        return None
    return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    text = content if isinstance(content, str) else text_of(content)
    return f"Error: {text}" if block.get("is_error") else text


def text_of(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(b.get("text", "") for b in content if b.get("type") == "text" and b.get("text"))


def blocks_of(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)

"""An LLMRequest as Messages API parameters, with the prompt-cache breakpoint placed."""

from __future__ import annotations

import copy
from typing import Any

from conversations.llm.types import LLMRequest

EPHEMERAL = {"type": "ephemeral"}
# Blocks the API refuses to carry cache_control.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def build_params(request: LLMRequest) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create``; the request itself is not mutated."""
    system = _blocks(copy.deepcopy(request.system))
    messages = [
        {**message, "content": _blocks(copy.deepcopy(message.get("content", [])))}
        for message in request.messages
    ]
    if request.cache_breakpoint_before_last_user:
        place_cache_breakpoint(system, messages)
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        params["system"] = system
    if request.tools:
        params["tools"] = copy.deepcopy(list(request.tools))
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.thinking_budget_tokens:
        params["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget_tokens}
    if request.stop_sequences:
        params["stop_sequences"] = list(request.stop_sequences)
    if request.metadata_user_id:
        params["metadata"] = {"user_id": request.metadata_user_id}
    return params


def place_cache_breakpoint(system: list[dict[str, Any]], messages: list[dict[str, Any]]) -> dict | None:
    """Mark the last cacheable block before the trailing block of the last user message.

    That trailing block is the per-call [CURRENT_STATE]; everything before it
    (tools, system, history) is the stable prefix the cache can reuse on the
    next call. Returns the marked block, or None when there is nothing before
    it (a first message with no system prompt).
    """
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None)
    if last_user is None:
        return None
    prefix: list[dict[str, Any]] = list(system)
    for message in messages[: last_user + 1]:
        prefix.extend(message["content"])
    for block in reversed(prefix[:-1]):
        if _cacheable(block):
            block["cache_control"] = dict(EPHEMERAL)
            return block
    return None


def _cacheable(block: dict[str, Any]) -> bool:
    if block.get("type") in _UNCACHEABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)

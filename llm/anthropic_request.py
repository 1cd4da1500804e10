"""An LLMRequest as Messages API parameters, with the prompt-cache breakpoint placed."""

from __future__ import annotations

from typing import Any

from llm.types import LLMRequest

EPHEMERAL = {"type": "ephemeral"}
# Blocks the API refuses to carry cache_control.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def build_params(request: LLMRequest) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create``; the request itself is not mutated.

    Lists are new and blocks are shared with the request: the one block that
    gets the cache breakpoint is replaced by a marked copy. Deep-copying the
    history and the tool schemas instead cost about a millisecond per model
    call with forty tools, growing with the conversation.
    """
    system = _blocks(request.system)
    messages = [{**message, "content": _blocks(message.get("content", []))} for message in request.messages]
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
        params["tools"] = list(request.tools)
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
    next call. The marked block is a copy put in its list's place (``system``
    or a message's ``content``); the original block is left as it was.
    Returns the marked copy, or None when there is nothing before the
    trailing block (a first message with no system prompt).
    """
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), None)
    if last_user is None:
        return None
    slots: list[tuple[list[dict[str, Any]], int]] = [(system, i) for i in range(len(system))]
    for message in messages[: last_user + 1]:
        content = message["content"]
        slots.extend((content, i) for i in range(len(content)))
    for owner, i in reversed(slots[:-1]):
        if _cacheable(owner[i]):
            owner[i] = {**owner[i], "cache_control": dict(EPHEMERAL)}
            return owner[i]
    return None


def _cacheable(block: dict[str, Any]) -> bool:
    if block.get("type") in _UNCACHEABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)

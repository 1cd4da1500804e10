"""What the scripted server checks in a request: the API's own rules and a turn's expectations."""

from __future__ import annotations

import json
from typing import Any

from llm.scripted.render import data_is_intact, signature_for
from llm.scripted.script import Expect

MAX_CACHE_BREAKPOINTS = 4  # the API refuses more


def blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "text":
        return block.get("text", "")
    if block.get("type") == "tool_result":
        return "\n".join(block_text(part) for part in blocks(block.get("content", "")))
    return ""


def protocol_problems(body: dict[str, Any]) -> list[str]:
    """Rules the real API enforces that a client bug would break, as messages."""
    problems = [f"{key}: Field required" for key in ("model", "max_tokens", "messages") if key not in body]
    messages = body.get("messages") or []
    if "messages" in body and not messages:
        problems.append("messages: at least one message is required")
    marked = [b for b in _all_blocks(body) if "cache_control" in b]
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        problems.append(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marked)}."
        )
    problems += _message_rule_problems(messages)
    problems += _thinking_problems(body)
    for position, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        wanted = {b["id"] for b in blocks(message.get("content")) if b.get("type") == "tool_use"}
        following = messages[position + 1]["content"] if position + 1 < len(messages) else []
        answered = {b.get("tool_use_id") for b in blocks(following) if b.get("type") == "tool_result"}
        if wanted - answered:
            problems.append(
                f"messages.{position + 1}: tool_use ids were found without tool_result blocks "
                f"immediately after: {', '.join(sorted(wanted - answered))}"
            )
    return problems


def _message_rule_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Content, alternation and tool_result rules, worded as the real API words them."""
    problems: list[str] = []
    if messages and messages[0].get("role") != "user":
        problems.append('messages: first message must use the "user" role')
    for position, message in enumerate(messages):
        content = blocks(message.get("content"))
        final_assistant = position == len(messages) - 1 and message.get("role") == "assistant"
        if not content and not final_assistant:
            problems.append(
                f"messages.{position}: all messages must have non-empty content "
                "except for the optional final assistant message"
            )
        if any(b.get("type") == "text" and not b.get("text") for b in content):
            problems.append(f"messages.{position}: text content blocks must be non-empty")
        if (
            final_assistant
            and content
            and str(content[-1].get("text", "x")) != str(content[-1].get("text", "x")).rstrip()
        ):
            problems.append(f"messages.{position}: final assistant content cannot end with trailing whitespace")
        if position and message.get("role") == messages[position - 1].get("role"):
            problems.append(
                f'messages.{position}: roles must alternate between "user" and "assistant", '
                f'but found multiple "{message.get("role")}" roles in a row'
            )
        offered = (
            {b.get("id") for b in blocks(messages[position - 1].get("content")) if b.get("type") == "tool_use"}
            if position
            else set()
        )
        answers = [b.get("tool_use_id") for b in content if b.get("type") == "tool_result"]
        stray = sorted(str(i) for i in answers if i not in offered)
        if stray:
            problems.append(
                f"messages.{position}: unexpected `tool_use_id` found in `tool_result` blocks: {', '.join(stray)}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
    return problems


def _thinking_problems(body: dict[str, Any]) -> list[str]:
    """Extended thinking's rules: signed blocks come back unchanged; a tool loop keeps its thinking."""
    problems: list[str] = []
    messages = body.get("messages") or []
    for position, message in enumerate(messages):
        for number, block in enumerate(blocks(message.get("content"))):
            where = f"messages.{position}.content.{number}"
            if block.get("type") == "thinking" and block.get("signature") != signature_for(block.get("thinking", "")):
                problems.append(f"{where}: Invalid `signature` in `thinking` block")
            if block.get("type") == "redacted_thinking" and not data_is_intact(str(block.get("data", ""))):
                problems.append(f"{where}: Invalid `data` in `redacted_thinking` block")
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return problems
    budget = int(thinking.get("budget_tokens") or 0)
    if budget < 1024:
        problems.append("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if budget >= int(body.get("max_tokens") or 0):
        problems.append("`max_tokens` must be greater than `thinking.budget_tokens`")
    if body.get("temperature") not in (None, 1):
        problems.append("`temperature` may only be set to 1 when thinking is enabled")
    # The assistant message the final tool results answer (the running tool loop) must start with thinking.
    if len(messages) >= 2 and any(b.get("type") == "tool_result" for b in blocks(messages[-1].get("content"))):
        first = (blocks(messages[-2].get("content")) or [{}])[0]
        if first.get("type") not in ("thinking", "redacted_thinking"):
            problems.append(
                f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{first.get('type')}`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block."
            )
    return problems


def context_problem(body: dict[str, Any], window: int | None, chars_per_token: float) -> tuple[int, str | None]:
    """The request's token count as this server counts it (its JSON size over ``chars_per_token``),
    and the API's refusal when that is past ``window`` (None: no limit)."""
    size = sum(len(json.dumps(body.get(key) or [], ensure_ascii=False)) for key in ("system", "tools", "messages"))
    tokens = int(size / chars_per_token)
    if window is not None and tokens > window:
        return tokens, f"prompt is too long: {tokens} tokens > {window} maximum"
    return tokens, None


def expectation_misses(expect: Expect | None, body: dict[str, Any]) -> list[str]:
    """Each expectation of the turn the request does not meet, described."""
    if expect is None:
        return []
    misses = []
    messages = body.get("messages") or [{}]
    last = blocks(messages[-1].get("content"))
    results = "\n".join(block_text(b) for b in last if b.get("type") == "tool_result")
    user_text = "\n".join(block_text(b) for b in last if b.get("type") == "text")
    system = "\n".join(block_text(b) for b in blocks(body.get("system")))
    tools = {t.get("name") for t in body.get("tools") or []}
    if expect.tool_result_contains is not None and expect.tool_result_contains not in results:
        misses.append(
            f"the last tool_result does not contain {expect.tool_result_contains!r} (it reads {results[:200]!r})"
        )
    if expect.user_text_contains is not None and expect.user_text_contains not in user_text:
        misses.append(f"the last user message does not contain {expect.user_text_contains!r}")
    if expect.system_contains is not None and expect.system_contains not in system:
        misses.append(f"the system prompt does not contain {expect.system_contains!r}")
    missing_tools = [name for name in expect.tools_include if name not in tools]
    if missing_tools:
        misses.append(f"the tools array lacks {', '.join(missing_tools)}")
    if expect.stream is not None and bool(body.get("stream")) != expect.stream:
        misses.append(f"expected stream={expect.stream}")
    budget = (body.get("thinking") or {}).get("budget_tokens")
    if expect.thinking_budget_tokens is not None and budget != expect.thinking_budget_tokens:
        misses.append(f"expected thinking with budget_tokens={expect.thinking_budget_tokens}, got {budget}")
    last_role = messages[-1].get("role")
    if expect.last_role is not None and last_role != expect.last_role:
        misses.append(f"expected the last message to be the {expect.last_role}'s, not the {last_role}'s")
    return misses


def _all_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = blocks(body.get("system")) + list(body.get("tools") or [])
    for message in body.get("messages") or []:
        found += blocks(message.get("content"))
    return found

"""Handlers of the utility tools: search_tools and plan."""

from __future__ import annotations

import json
import re

from registry.result import ToolResult

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def search_tools(inputs: dict, context: dict) -> ToolResult:
    """Rank the tools the tenant may call by word overlap with the query."""
    registry = context["_tool_registry"]
    query = _words(inputs["query"])
    limit = inputs.get("limit", 5)
    scored = []
    for definition in registry.definitions().values():
        if definition.name == "search_tools" or not definition.visible_to(context["tenant_id"]):
            continue
        name_words = _words(definition.name)
        text_words = _words(definition.description)
        score = 2 * len(query & name_words) + len(query & text_words)
        if score:
            scored.append((score, definition.name, definition))
    scored.sort(key=lambda item: (-item[0], item[1]))
    found = [d for _, _, d in scored[:limit]]
    if not found:
        return ToolResult(content=f"No tools match {inputs['query']!r}. Try other words.")
    lines = [f"Found {len(found)} tool(s) for {inputs['query']!r}:"]
    for d in found:
        lines.append(f"- {d.name}: {d.description}")
        lines.append(f"  input_schema: {json.dumps(d.input_schema, separators=(',', ':'))}")
    return ToolResult(content="\n".join(lines))


_STATUS_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "skipped": "[-]"}


def plan(inputs: dict, context: dict) -> ToolResult:
    """Set or update the conversation's step plan and return it."""
    from conversations.models import Conversation

    conversation_id = context.get("conversation_id")
    if not conversation_id:
        return ToolResult.failure("plan needs a conversation; none is active for this call")
    conversation = (
        Conversation.objects.for_tenant(context["tenant_id"]).filter(id=conversation_id).first()
    )
    if conversation is None:
        return ToolResult.failure(f"no conversation {conversation_id!r} for this tenant")
    if "steps" not in inputs and "update" not in inputs and "goal" not in inputs:
        if not conversation.plan:
            return ToolResult.failure("there is no plan yet: pass `steps` to create one")
        return ToolResult(content=render_plan(conversation.plan))
    current = dict(conversation.plan or {})
    if "goal" in inputs:
        current["goal"] = inputs["goal"]
    if "steps" in inputs:
        current["steps"] = [
            {"title": step["title"], "status": step.get("status", "pending")}
            for step in inputs["steps"]
        ]
    if "update" in inputs:
        steps = current.get("steps") or []
        number = inputs["update"]["step"]
        if number > len(steps):
            return ToolResult.failure(
                f"update.step {number} does not exist; the plan has {len(steps)} step(s)"
            )
        steps[number - 1]["status"] = inputs["update"]["status"]
    conversation.plan = current
    conversation.save(update_fields=["plan", "updated_at"])
    return ToolResult(content=render_plan(current))


def render_plan(plan: dict) -> str:
    steps = plan.get("steps") or []
    done = sum(1 for step in steps if step["status"] in ("done", "skipped"))
    lines = []
    if plan.get("goal"):
        lines.append(f"Goal: {plan['goal']}")
    lines.append(f"Plan ({done}/{len(steps)} done):")
    for number, step in enumerate(steps, 1):
        lines.append(f"{number}. {_STATUS_MARK[step['status']]} {step['title']}")
    return "\n".join(lines)

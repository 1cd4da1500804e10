"""Handlers of the utility tools: search_tools and plan.

Both are written against the Uniform Tool Contract (source-decorated): they
return ``Ok`` and raise ``HintException`` for corrections the model can make.
"""

from __future__ import annotations

import json

from registry.contract import Err, HintException, Ok, uniform_contract
from registry.suggest import words


@uniform_contract(name="search_tools", is_tabular=False)
def search_tools(inputs: dict, context: dict) -> Ok:
    """Rank the tools the tenant may call by word overlap with the query."""
    registry = context["_tool_registry"]
    query = words(inputs["query"])
    limit = inputs.get("limit", 5)
    scored = []
    for definition in registry.definitions().values():
        if definition.name == "search_tools" or not definition.visible_to(context["tenant_id"]):
            continue
        score = 2 * len(query & words(definition.name)) + len(query & words(definition.description))
        if score:
            scored.append((score, definition.name, definition))
    scored.sort(key=lambda item: (-item[0], item[1]))
    found = [d for _, _, d in scored[:limit]]
    if not found:
        raise HintException(
            "fetch",
            f"no tools match {inputs['query']!r}",
            narrow="describe the task in other, plainer words (what you want done, not how)",
        )
    lines = [f"Found {len(found)} tool(s) for {inputs['query']!r}:"]
    for d in found:
        lines.append(f"- {d.name}: {d.description}")
        lines.append(f"  input_schema: {json.dumps(d.input_schema, separators=(',', ':'))}")
    return Ok(rows=len(found), data="\n".join(lines))


_STATUS_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "skipped": "[-]"}


@uniform_contract(name="plan", is_tabular=False)
def plan(inputs: dict, context: dict) -> Ok | Err:
    """Set or update the conversation's step plan and return it."""
    from conversations.models import Conversation

    conversation_id = context.get("conversation_id")
    conversation = None
    if conversation_id:
        conversation = (
            Conversation.objects.for_tenant(context["tenant_id"]).filter(id=conversation_id).first()
        )
    if conversation is None:
        # Not the model's mistake: the platform called the tool outside a conversation.
        return Err("plan needs an active conversation of this tenant", "NoConversation")
    current = dict(conversation.plan or {})
    if not inputs:
        if not current.get("steps"):
            raise HintException("schema", "there is no plan yet: pass `steps` to create one")
        return _ok(current)
    if "goal" in inputs:
        current["goal"] = inputs["goal"]
    if "steps" in inputs:
        current["steps"] = [
            {"title": step["title"], "status": step.get("status", "pending")}
            for step in inputs["steps"]
        ]
    if "update" in inputs:
        _update_step(current.get("steps") or [], inputs["update"])
    conversation.plan = current
    conversation.save(update_fields=["plan", "updated_at"])
    return _ok(current)


def _update_step(steps: list[dict], update: dict) -> None:
    number = update["step"]
    if number > len(steps):
        raise HintException(
            "schema",
            f"update.step {number} does not exist; the plan has {len(steps)} step(s)",
            [
                {"label": f"step {n}: {step['title']}", "score": 1.0 - n / 1000}
                for n, step in enumerate(steps, 1)
            ],
        )
    steps[number - 1]["status"] = update["status"]


def _ok(plan: dict) -> Ok:
    return Ok(rows=len(plan.get("steps") or []), data=render_plan(plan))


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

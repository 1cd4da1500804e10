"""Handlers of the utility tools: search_tools and plan.

Both are written against the Uniform Tool Contract (source-decorated): they
return ``Ok`` and raise ``HintException`` for corrections the model can make.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry.context import ToolContext
from registry.contract import Err, HintException, Ok, uniform_contract
from registry.conversation_records import conversation_records
from registry.declarations import Tool
from tools import skill_shelf

if TYPE_CHECKING:
    from registry.snapshot import Definition

# The tenant's approved skills a search names beside the tools, at most (tools.skill_shelf).
SKILLS_SHOWN = 3


@uniform_contract(name="search_tools", is_tabular=False)
def search_tools(inputs: dict, context: ToolContext) -> Ok:
    """Find the tools that best match the task and page them into the working set."""
    registry = context.registry
    found = ranked_tools(registry, inputs["query"], context.tenant_id, inputs.get("limit", 5), mode=context.mode)
    hits = found.hits
    skills = skill_shelf.find(context.tenant_id, inputs["query"], SKILLS_SHOWN)
    if not hits and not skills:
        held = f"; of the tools you already have, these match: {', '.join(found.held)}" if found.held else ""
        raise HintException(
            "fetch",
            f"no tools match {inputs['query']!r}{held}",
            narrow="describe the task in other, plainer words (what you want done, not how)",
        )
    names = [d.name for d, _ in hits] + (["use_skill"] if skills else [])
    paged = _page_in(registry, context, names, inputs["query"])
    lines = [f"Found {len(hits)} tool(s) for {inputs['query']!r}:"]
    for definition, _ in hits:
        lines.append(f"- {definition.name}: {definition.description}")
        lines.append(f"  input_schema: {json.dumps(definition.input_schema, separators=(',', ':'))}")
    if skills:
        lines.append("Skills of this team that fit (use_skill with the name loads its instructions):")
        lines.extend(f"- skill {name}: {description}" for name, description in skills)
    if found.held:
        lines.append(f"These match too, and you already have them: {', '.join(found.held)}.")
    if paged is not None:
        lines.append(_paging_note(paged))
    return Ok(rows=len(hits) + len(skills), data="\n".join(lines))


@dataclass(frozen=True, slots=True)
class Found:
    """What a search found: ``hits``, the best tools not yet offered on every call, with
    their scores; and ``held``, the names of resident tools (offered on every call of the
    mode: registry.surface) that matched as well as the hits, which the model has already."""

    hits: list[tuple[Definition, float]]
    held: list[str]


def ranked_tools(registry, query: str, tenant_id: str, limit: int, *, mode: str = "chat") -> Found:
    """The ranking search_tools returns: the best ``limit`` tools, leaving out search_tools
    itself and the mode's resident tools. A result slot is worth a tool the model cannot
    call yet (search_tools says so in its description); the resident ones that match are
    named, not listed. They are ranked with the rest, then set aside, so leaving them
    out moves no other tool's score."""
    from registry.surface import resident_entries

    resident = {entry.name for entry in resident_entries(mode)}
    hits, held = [], []
    for definition, score in registry.tool_search().search(query, tenant_id, limit + 1 + len(resident)):
        if definition.name == "search_tools":
            continue
        if definition.name in resident:
            held.append(definition.name)
            continue
        hits.append((definition, score))
        if len(hits) == limit:
            break
    return Found(hits, held)


def find_tools(registry, query: str, tenant_id: str, limit: int, *, mode: str = "chat") -> list:
    """``ranked_tools``' hits: what search_tools lists."""
    return ranked_tools(registry, query, tenant_id, limit, mode=mode).hits


def _page_in(registry, context: ToolContext, names: list[str], query: str):
    conversation_id = context.conversation_id
    if not conversation_id:
        return None
    from registry.surface import page_in

    return page_in(
        registry,
        context.tenant_id,
        names,
        conversation_id=conversation_id,
        namespace_id=context.namespace_id or "",
        query=query,
    )


def _paging_note(paged) -> str:
    from registry.surface import MAX_TOOL_SURFACE

    parts = []
    if paged.added:
        parts.append(f"Now callable in this conversation: {', '.join(paged.added)}.")
    if paged.evicted:
        parts.append(
            f"To stay within {MAX_TOOL_SURFACE} tools, these least recently used tools were put away: "
            f"{', '.join(paged.evicted)} (search for them again if you need them)."
        )
    if paged.over_budget:
        parts.append(f"Not added (more than the tool surface holds at once): {', '.join(paged.over_budget)}.")
    return " ".join(parts) or "All of them were already available."


_STATUS_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]", "skipped": "[-]"}


@uniform_contract(name="plan", is_tabular=False)
def plan(inputs: dict, context: ToolContext) -> Ok | Err:
    """Set or update the conversation's step plan and return it."""
    conversation_id = context.conversation_id
    conversation = conversation_records().find(context.tenant_id, conversation_id) if conversation_id else None
    if conversation is None:
        # Not the model's mistake: the platform called the tool outside a conversation.
        return Err("plan needs an active conversation of this tenant", "NoConversation")
    current = conversation.plan
    if not inputs:
        if not current.get("steps"):
            raise HintException("schema", "there is no plan yet: pass `steps` to create one")
        return _ok(current)
    if "goal" in inputs:
        current["goal"] = inputs["goal"]
    if "steps" in inputs:
        current["steps"] = [
            {"title": step["title"], "status": step.get("status", "pending")} for step in inputs["steps"]
        ]
    if "update" in inputs:
        _update_step(current.get("steps") or [], inputs["update"])
    conversation_records().save_plan(context.tenant_id, conversation.id, current)
    return _ok(current)


def _update_step(steps: list[dict], update: dict) -> None:
    number = update["step"]
    if number > len(steps):
        raise HintException(
            "schema",
            f"update.step {number} does not exist; the plan has {len(steps)} step(s)",
            [{"label": f"step {n}: {step['title']}", "score": 1.0 - n / 1000} for n, step in enumerate(steps, 1)],
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


TOOLS = (
    Tool(
        name="search_tools",
        description=(
            "Find tools that can do something you cannot do with the tools you have now. "
            "Describe the task in plain words (for example 'send an email with an attachment' "
            "or 'convert a spreadsheet to a chart'). Returns the best matching tools with "
            "their input schemas; they become callable for the rest of this conversation."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What you want to do, in plain words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many tools to return (1-20, default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=search_tools,
        category="utility",
        status_message="Searching tools",
        inline=True,
    ),
    Tool(
        name="plan",
        description=(
            "Write down or update the step-by-step plan for the current task, so progress is "
            "tracked across turns. Pass `steps` to set the whole plan, or `update` to change "
            "the status of one step. Returns the plan as it now stands."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the plan achieves."},
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "minLength": 1},
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "done", "skipped"],
                                "default": "pending",
                            },
                        },
                        "required": ["title"],
                        "additionalProperties": False,
                    },
                    "description": "The whole plan, in order. Replaces any earlier plan.",
                },
                "update": {
                    "type": "object",
                    "properties": {
                        "step": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "1-based step number.",
                        },
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "done", "skipped"],
                        },
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                    "description": "Change one step's status.",
                },
            },
            "additionalProperties": False,
        },
        handler=plan,
        category="utility",
        status_message="Updating the plan",
        inline=True,
    ),
)

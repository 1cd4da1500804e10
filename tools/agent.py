"""Handlers of the tools that use the model or the loop: call_llm, delegate(_batch), request_user_input."""

from __future__ import annotations

import asyncio

from django.conf import settings

from registry.aio import in_db_thread
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from registry.ports import SubtaskOutcome, SubtaskRunner


@uniform_contract(name="call_llm", is_tabular=False)
async def call_llm(inputs: dict, context: ToolContext) -> Ok:
    """One completion, no tools, no history; its cost rides on the result."""
    from llm import LLMRequest
    from llm.roles import create_llm_client_for_role, get_model_for_role

    # Through a worker whose connection is tidied after, not Django's shared async-ORM thread.
    config = await in_db_thread(get_model_for_role)(inputs.get("role", "chat"))
    provider = create_llm_client_for_role(config.role, model=config)
    request = LLMRequest.for_model(
        config,
        system=inputs.get("system", ""),
        tools=[],
        messages=[{"role": "user", "content": [{"type": "text", "text": inputs["prompt"]}]}],
        cache_breakpoint_before_last_user=False,
    )
    response = await provider.acomplete(request)
    return Ok(rows=1, data=response.text, effects=Effects(cost=response.usage.cost_usd(config)))


def subtask_runner(context: ToolContext, tool: str) -> SubtaskRunner:
    """The turn's runner of delegated tasks. Raises a Hint outside a turn or past the depth limit."""
    subtasks = context.subtasks
    if subtasks is None:
        raise HintException("schema", f"{tool} only works inside a conversation turn")
    if context.depth >= settings.EUNICE_MAX_DELEGATION_DEPTH:
        raise HintException(
            "schema", f"a delegated task cannot delegate again (depth limit {settings.EUNICE_MAX_DELEGATION_DEPTH})"
        )
    return subtasks


@uniform_contract(name="delegate", is_tabular=False, is_cost_rollup=True)
async def delegate(inputs: dict, context: ToolContext) -> Ok:
    """Run the task as a sub-agent in delegate mode and return its final answer."""
    subtasks = subtask_runner(context, "delegate")
    outcome = await subtasks.run(inputs["task"], budget_usd=inputs.get("max_cost_usd"))
    warnings = [] if outcome.finished else [Warning("incomplete", f"the helper stopped early ({outcome.stop_reason})")]
    _note_failures(subtasks, [inputs["task"]], [outcome])
    return Ok(rows=1, data=outcome.text, warnings=warnings, effects=Effects(cost=outcome.cost_usd))


def _note_failures(subtasks: SubtaskRunner, tasks: list[str], outcomes: list[SubtaskOutcome]) -> None:
    """Tasks whose helper stopped before finishing, for the parent's completion guardrail."""
    for task, outcome in zip(tasks, outcomes, strict=True):
        if not outcome.finished:
            subtasks.note_unfinished(task, outcome.stop_reason)


@uniform_contract(name="delegate_batch", is_tabular=False, is_cost_rollup=True)
async def delegate_batch(inputs: dict, context: ToolContext) -> Ok:
    """Run each task as its own sub-agent, concurrently; reports in the order given."""
    subtasks = subtask_runner(context, "delegate_batch")
    tasks, finished = inputs["tasks"], 0
    report = context.progress

    async def run(task: str) -> SubtaskOutcome:
        nonlocal finished
        outcome = await subtasks.run(task, budget_usd=inputs.get("max_cost_usd_each"))
        finished += 1
        report(f"{finished} of {len(tasks)} tasks finished", finished / len(tasks))
        return outcome

    outcomes = await asyncio.gather(*(run(task) for task in tasks))
    summary = "\n\n".join(
        f"## Task {n}: {task}\n{o.text}" for n, (task, o) in enumerate(zip(tasks, outcomes, strict=True), 1)
    )
    early = [n for n, o in enumerate(outcomes, 1) if not o.finished]
    warnings = [Warning("incomplete", f"task(s) {early} stopped early")] if early else []
    _note_failures(subtasks, tasks, outcomes)
    return Ok(
        rows=len(outcomes), data=summary, warnings=warnings, effects=Effects(cost=sum(o.cost_usd for o in outcomes))
    )


@uniform_contract(name="request_user_input", is_tabular=False)
async def request_user_input(inputs: dict, context: ToolContext) -> Ok | Err:
    """Show the question on the user's socket and wait for their answer."""
    if context.questions is None:
        return Err(
            "nobody is connected to answer questions in this conversation; decide, or state your assumption",
            "NotInteractive",
        )
    text = await context.questions.ask(inputs["question"], inputs.get("choices", []), settings.EUNICE_QUESTION_TIMEOUT)
    if text is None:
        return Ok(
            rows=0,
            data="The user has not answered.",
            warnings=[
                Warning("no_answer", f"no answer within {settings.EUNICE_QUESTION_TIMEOUT:g} s; go on without it")
            ],
        )
    return Ok(rows=1, data=f"The user answered: {text}")


TOOLS = (
    Tool(
        name="call_llm",
        description=(
            "Ask a language model for a one-off piece of text — a summary, a rewrite, a "
            "classification, a translation — without tools and without the conversation's history. "
            "Give everything it needs in `prompt`."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "minLength": 1, "description": "The whole request."},
                "system": {"type": "string", "description": "Optional instructions for the model."},
                "role": {"type": "string", "default": "chat", "description": "Which configured model role to use."},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        handler=call_llm,
        category="utility",
        status_message="Asking the model",
        timeout_seconds=600,
    ),
    Tool(
        name="delegate",
        description=(
            "Hand a self-contained task to a helper agent that works with its own tools and "
            "reports back. Describe the task fully (it does not see this conversation) and what "
            "the answer should contain. Optionally cap what it may spend."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "task": {"type": "string", "minLength": 1},
                "max_cost_usd": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["task"],
            "additionalProperties": False,
        },
        handler=delegate,
        category="utility",
        status_message="Delegating",
        timeout_seconds=1800,
    ),
    Tool(
        name="delegate_batch",
        description=(
            "Hand several independent tasks to helper agents that work on them at the same time; "
            "returns each one's report. Use for parallel research or checks that do not depend on "
            "each other."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "tasks": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "string", "minLength": 1}},
                "max_cost_usd_each": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["tasks"],
            "additionalProperties": False,
        },
        handler=delegate_batch,
        category="utility",
        status_message="Delegating in parallel",
        timeout_seconds=1800,
    ),
    Tool(
        name="request_user_input",
        description=(
            "Ask the user a question and wait for the answer, when you cannot go on without a "
            "decision or a fact only they have. Offer `choices` when the answer is one of a few."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1},
                "choices": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            },
            "required": ["question"],
            "additionalProperties": False,
        },
        handler=request_user_input,
        category="utility",
        status_message="Waiting for your answer",
        timeout_seconds=3600,
    ),
)

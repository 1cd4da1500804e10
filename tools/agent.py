"""Handlers of the tools that use the model or the loop: call_llm, delegate(_batch), request_user_input."""

from __future__ import annotations

import asyncio

from registry.aio import in_db_thread
from django.conf import settings

from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract


@uniform_contract(name="call_llm", is_tabular=False)
async def call_llm(inputs: dict, context: dict) -> Ok:
    """One completion, no tools, no history; its cost rides on the result."""
    from conversations.llm import LLMRequest
    from conversations.llm.roles import create_llm_client_for_role, get_model_for_role

    # Through a worker whose connection is tidied after, not Django's shared async-ORM thread.
    config = await in_db_thread(get_model_for_role)(inputs.get("role", "chat"))
    provider = create_llm_client_for_role(config.role, model=config)
    request = LLMRequest.for_model(
        config, system=inputs.get("system", ""), tools=[],
        messages=[{"role": "user", "content": [{"type": "text", "text": inputs["prompt"]}]}],
        cache_breakpoint_before_last_user=False,
    )
    response = await provider.acomplete(request)
    return Ok(rows=1, data=response.text, effects=Effects(cost=response.usage.cost_usd(config)))


def _runtime(context: dict, tool: str):
    runtime = context.get("_runtime")
    if runtime is None:
        raise HintException("schema", f"{tool} only works inside a conversation turn")
    if runtime.depth >= settings.EUNICE_MAX_DELEGATION_DEPTH:
        raise HintException("schema", f"a delegated task cannot delegate again (depth limit {settings.EUNICE_MAX_DELEGATION_DEPTH})")
    return runtime


@uniform_contract(name="delegate", is_tabular=False, is_cost_rollup=True)
async def delegate(inputs: dict, context: dict) -> Ok:
    """Run the task as a sub-agent in delegate mode and return its final answer."""
    from conversations.loop import run_subtask

    runtime = _runtime(context, "delegate")
    outcome = await run_subtask(runtime, inputs["task"], budget_usd=inputs.get("max_cost_usd"))
    warnings = [] if _finished(outcome) else [
        Warning("incomplete", f"the helper stopped early ({outcome.stop_reason})")
    ]
    _note_failures(runtime, [inputs["task"]], [outcome])
    return Ok(rows=1, data=outcome.text, warnings=warnings, effects=Effects(cost=outcome.cost_usd))


def _finished(outcome) -> bool:
    """Whether a helper ended its answer itself (not stopped by its budget, the call cap, an error)."""
    return outcome.stop_reason == "end_turn"


def _note_failures(runtime, tasks: list[str], outcomes: list) -> None:
    """Tasks whose helper stopped before finishing, for the parent's completion guardrail."""
    runtime.failed_delegations.extend(
        {"task": task, "stopped": outcome.stop_reason}
        for task, outcome in zip(tasks, outcomes, strict=True) if not _finished(outcome)
    )


@uniform_contract(name="delegate_batch", is_tabular=False, is_cost_rollup=True)
async def delegate_batch(inputs: dict, context: dict) -> Ok:
    """Run each task as its own sub-agent, concurrently; reports in the order given."""
    from conversations.loop import run_subtask

    runtime = _runtime(context, "delegate_batch")
    tasks, finished = inputs["tasks"], 0
    report = context["progress_callback"]

    async def run(task: str):
        nonlocal finished
        outcome = await run_subtask(runtime, task, budget_usd=inputs.get("max_cost_usd_each"))
        finished += 1
        report(f"{finished} of {len(tasks)} tasks finished", finished / len(tasks))
        return outcome

    outcomes = await asyncio.gather(*(run(task) for task in tasks))
    summary = "\n\n".join(f"## Task {n}: {task}\n{o.text}" for n, (task, o) in enumerate(zip(tasks, outcomes, strict=True), 1))
    early = [n for n, o in enumerate(outcomes, 1) if not _finished(o)]
    warnings = [Warning("incomplete", f"task(s) {early} stopped early")] if early else []
    _note_failures(runtime, tasks, outcomes)
    return Ok(rows=len(outcomes), data=summary, warnings=warnings,
              effects=Effects(cost=sum(o.cost_usd for o in outcomes)))


@uniform_contract(name="request_user_input", is_tabular=False)
async def request_user_input(inputs: dict, context: dict) -> Ok | Err:
    """Show the question on the user's socket and wait for their answer."""
    from conversations import questions

    runtime = context.get("_runtime")
    if runtime is None or not runtime.interactive:
        return Err("nobody is connected to answer questions in this conversation; decide, or state your assumption",
                   "NotInteractive")
    question_id, answer = questions.ask(runtime.conversation.pk)
    runtime.display.send({"type": "question", "question_id": question_id, "text": inputs["question"],
                          "choices": inputs.get("choices", [])})
    runtime.recorder.record("status", {"question_id": question_id, "question": inputs["question"]})
    await in_db_thread(runtime.flush_events)()  # the pending question is on record while we wait
    try:
        text = await asyncio.wait_for(answer, settings.EUNICE_QUESTION_TIMEOUT)
    except TimeoutError:
        return Ok(rows=0, data="The user has not answered.", warnings=[
            Warning("no_answer", f"no answer within {settings.EUNICE_QUESTION_TIMEOUT:g} s; go on without it")
        ])
    finally:
        questions.forget(runtime.conversation.pk, question_id)
    return Ok(rows=1, data=f"The user answered: {text}")

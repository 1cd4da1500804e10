"""The conversation's side of the ports a tool reaches it through (registry.ports).

A turn's ``Runtime`` offers these on every ``ToolContext`` it builds: a delegated
task runner, someone to ask (only when a person is connected), and the turn's own
rules for a call (``TurnGate``: what the dispatcher decided before the call, or the
policy rules for a call it never saw, such as a sandboxed program's inner call).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from registry.aio import in_db_thread
from registry.context import ToolContext
from registry.contract import Err
from registry.ports import SubtaskOutcome

if TYPE_CHECKING:
    from conversations.runtime import Runtime
    from conversations.state import DispatchState


class Subtasks:
    """``SubtaskRunner``: a task as a sub-agent of ``runtime`` (its events, budget, depth)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    async def run(self, task: str, *, budget_usd: float | None, label: str = "") -> SubtaskOutcome:
        from conversations.loop import run_subtask

        outcome = await run_subtask(self._runtime, task, budget_usd=budget_usd, label=label)
        return SubtaskOutcome(outcome.text, outcome.stop_reason, outcome.cost_usd)

    def note_unfinished(self, task: str, stopped: str) -> None:
        self._runtime.failed_delegations.append({"task": task, "stopped": stopped})


class Questions:
    """``QuestionAsker``: the question on the conversation's socket; waits for the answer."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    @property
    def key(self) -> str:
        """Whom this asks: the conversation's socket (the same for every call of the conversation)."""
        return f"conversation:{self._runtime.conversation.pk}"

    async def ask(self, question: str, choices: list[str], timeout: float) -> str | None:
        chunk = {"type": "question", "text": question, "choices": choices}
        found = await _wait_for_the_person(self._runtime, chunk, {"question": question}, timeout)
        return found if isinstance(found, str) else None

    async def elicit(self, request: Any, timeout: float) -> dict | None:
        """An MCP server's request for input as an ``elicitation`` chunk on the socket; the
        person's accept (with the form's content), decline or cancel comes back through
        ``questions.answer`` as a dict. Runs on the MCP event loop: the display and the
        question registry take calls from any thread."""
        chunk = {"type": "elicitation", **request.as_chunk()}
        noted = {"elicitation": request.server, "mode": request.mode}
        found = await _wait_for_the_person(self._runtime, chunk, noted, timeout)
        return found if isinstance(found, dict) else None


async def _wait_for_the_person(runtime: Runtime, chunk: dict, noted: dict, timeout: float) -> str | dict | None:
    """Show ``chunk`` (a question or an elicitation) on the conversation's sockets and wait
    for its answer, at most ``timeout`` seconds (None after that).

    The chunk is on record while it waits (``asked``), and its end (``settled``) once it
    is answered or given up: a page drawn or redrawn meanwhile (a reload, a reconnect)
    shows it again from the stored events, and the person can still answer it. Its end
    also goes to the sockets (``question_settled``), so no page goes on offering it.
    """
    from conversations import questions

    question_id, answer = questions.ask(runtime.conversation.pk)
    chunk = {**chunk, "question_id": question_id}
    runtime.recorder.record("status", {"question_id": question_id, **noted, "asked": chunk})
    await in_db_thread(runtime.flush_events)()  # on record before any page can show it
    runtime.display.send(dict(chunk))
    try:
        found = await asyncio.wait_for(answer, timeout)
    except TimeoutError:
        found = None
    finally:
        questions.forget(runtime.conversation.pk, question_id)
    runtime.recorder.record("status", {"settled": question_id})
    await in_db_thread(runtime.flush_events)()  # a page drawn from now on no longer offers it
    # Pages that still show it (another tab; one left open past the timeout) take it away.
    runtime.display.send({"type": "question_settled", "question_id": question_id, "answered": found is not None})
    return found


class TurnGate:
    """``CallGate`` of one dispatch state: the turn's loop guard and policy rules.

    The dispatcher plans the model's calls in the model's order (loop guard, policy,
    their events and warnings) and leaves each verdict here under its tool_use_id; the
    registry's gate reads it back when the call arrives. A call the dispatcher never
    planned (a sandboxed program's inner ``call_tool``) meets the policy rules here.
    """

    def __init__(self, runtime: Runtime, state: DispatchState) -> None:
        self._runtime, self._state = runtime, state
        self._planned: dict[str, Err | None] = {}

    def plan(self, tool_use_id: str, refusal: Err | None) -> None:
        self._planned[tool_use_id] = refusal

    def planned(self, tool_use_id: str | None) -> bool:
        """Whether ``check`` of this call only reads its verdict back (no query)."""
        return tool_use_id in self._planned

    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None:
        if context.tool_use_id in self._planned:
            return self._planned.pop(context.tool_use_id)
        from conversations.dispatcher import policy_refusal

        return policy_refusal(name, self._runtime, self._state)[0]

    def awaiting(self, card: dict) -> None:
        """A call of this turn (or a program's inner call) waits for the person: its card
        goes to the page and on record, and the turn pauses after this round of calls."""
        runtime = self._runtime
        runtime.awaiting.append(card)
        runtime.recorder.record(
            "approval_requested",
            {"approval": card["approval_id"], "tool": card["tool"], "args_hash": card["args_hash"]},
        )
        runtime.display.send({"type": "card", "card": card})

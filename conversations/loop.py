"""The agentic loop: model call → tool calls → model call … until the model answers.

One user message is one *turn* (numbered, recorded, replayable); inside it the
loop makes up to ``EUNICE_MAX_MODEL_CALLS`` model calls. Everything that
touches the database runs off the event loop (``_db``); streaming, tool
dispatch and cancellation are awaited, so nothing blocks other conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings

from conversations.approvals import expire_overdue
from conversations.context import store_estimator, stored_estimator
from conversations.dispatcher import dispatch_tool_calls
from conversations.effects import SubtaskLog
from conversations.history import load_history, sendable
from conversations.inserts import insert_rows
from conversations.models import Conversation, UsageLog
from conversations.observations import state_lines
from conversations.presenting import for_person
from conversations.prompt import SYSTEM_PROMPT, TokenEstimator, compact_tool_results, current_state_block
from conversations.runtime import Runtime
from conversations.state import CostTracker, DispatchState
from conversations.stops import (
    CUT_NOTICE,
    NOTICES,
    REFUSAL_NOTICE,
    REFUSED_MESSAGE,
    Answer,
    continue_message,
    cut_tool_note,
    with_notice,
)
from conversations.turn_reservations import keep_beating
from conversations.turns import begin_turn, finish_turn, interrupt_turn
from conversations.working_set import copy_scope, drop_scope, paged_in
from eunice.db.prepared import Prepared
from llm import LLMContextTooLongError, LLMError, LLMRequest, LLMResponse, MessageStop, TextDelta, ThinkingDelta
from llm.cost import Usage
from llm.roles import create_llm_client_for_role, get_model_for_role
from llm.tracing import invoke_agent
from registry.aio import in_db_thread
from registry.context import Budget
from registry.surface import Surface, compose_surface, surface_event, touch_used

logger = logging.getLogger("eunice.conversations")

AGENT = "eunice"  # gen_ai.agent.name of a turn's invoke_agent span (llm.tracing)
FINAL_STOP_REASONS = frozenset({"end_turn", "max_tokens", "stop_sequence", "refusal"})


@dataclass
class TurnOutcome:
    text: str
    stop_reason: str
    model_calls: int
    cost_usd: float
    cancelled: bool = False
    messages: list[dict] = field(default_factory=list)
    error: str | None = None  # why the model could not answer (stop_reason "error"): never in ``text``


class Cancelled(Exception):
    """The user cancelled while the model was answering."""


@dataclass
class Progress:
    """What a turn (or a delegated task) has done so far, kept whatever ends it.

    ``messages`` are the messages it added (each tool call with its results);
    ``heard`` is the text of the model call now streaming, as the user saw it.
    """

    messages: list[dict] = field(default_factory=list)
    heard: list[str] = field(default_factory=list)

    def partial(self) -> str:
        return "".join(self.heard)

    def kept(self) -> list[dict]:
        """The messages to store when the turn stops early: every tool call still with its
        result (their effects persist), and the words of the call that was cut, as said."""
        kept = _well_formed(self.messages)
        partial = self.partial()
        if partial.strip():
            kept.append({"role": "assistant", "content": [{"type": "text", "text": partial}]})
        return kept


async def run_turn(
    conversation: Conversation,
    *,
    text: str,
    user: Any = None,
    display: Any = None,
    mode: str | None = None,
    role: str = "chat",
    interactive: bool = False,
    events: tuple[tuple[str, dict], ...] = (),
) -> TurnOutcome:
    """Answer one user message, calling tools as the model asks; returns when done.

    ``events`` are recorded first in the turn (a person's decision that resumes it).

    Raises ``TurnInProgress`` (before anything is stored) when a turn of the
    conversation is already running. A turn that raises or is cancelled is
    closed as interrupted, keeping what it did; the exception goes on.
    """
    config, history, runtime, state = await in_db_thread(_open_turn)(
        conversation,
        role,
        events,
        user=user,
        user_message=text,
        display=display,
        mode=mode,
        interactive=interactive,
    )
    keep_beating()
    progress = Progress()
    try:
        try:
            provider = _provider(role, config)
            messages = [*history, {"role": "user", "content": [{"type": "text", "text": text}]}]
            with invoke_agent(
                AGENT, model=config.model, conversation_id=str(conversation.pk), tenant_id=runtime.tenant_id
            ):
                outcome = await _loop(runtime, state, provider, config, messages, progress)
        except LLMError as exc:  # the model could not be reached at all (a bad configuration)
            outcome = _failed(runtime, exc, 0, progress)
        finally:
            state.cancel.release()
        await in_db_thread(finish_turn)(runtime, outcome.text, outcome.messages)
    except BaseException as exc:
        # An unexpected error (or the task's cancellation) ends the turn here:
        # close it as interrupted, keeping the events it recorded and its tool calls.
        await asyncio.shield(in_db_thread(interrupt_turn)(runtime, _interruption(exc), progress.kept()))
        raise
    runtime.display.send(
        {
            "type": "done",
            "stop_reason": outcome.stop_reason,
            **({"notice": NOTICES[outcome.stop_reason]} if outcome.stop_reason in NOTICES else {}),
            "cancelled": outcome.cancelled,
            "cost_usd": round(runtime.cost.total, 6),
        }
    )
    return outcome


def _provider(role: str, config: Any) -> Any:
    """The role's model; offline mode shows the person's own tool calls' results as a person
    reads them (``conversations.presenting``), not as a model does."""
    provider = create_llm_client_for_role(role, model=config)
    if getattr(provider, "runs_the_persons_commands", False):
        provider.present = for_person
    return provider


def _interruption(exc: BaseException) -> str:
    """Why a turn stopped, for its ``interrupted`` event: the kind of failure, never its message
    (which may quote a secret); the traceback goes to the server log."""
    if isinstance(exc, asyncio.CancelledError):
        return "the turn was stopped before it finished (its task was cancelled)"
    return f"the turn failed with an internal error ({type(exc).__name__}); the details are in the server log"


def _open_turn(conversation: Conversation, role: str, events: tuple[tuple[str, dict], ...], **begin: Any):
    """A turn's opening database work as one step: the role's model, the new turn, the
    history, the dispatch state. The history is read once the turn is reserved (which
    closes a dead earlier turn, storing its partial answer) and leaves out the new
    message, which the turn sends as typed (what is stored has secrets redacted).
    One hop to a database thread instead of four: when many turns start at
    once, every hop is another wait for the GIL, and another time the event
    loop waits for it back while it relays the answers already streaming."""
    config = get_model_for_role(role)
    expire_overdue(conversation)  # an approval nobody decided in time: the model reads so in the history
    runtime = begin_turn(conversation, **begin)
    try:
        for kind, data in events:
            runtime.recorder.record(kind, data)
        history = load_history(conversation, leaving_out=runtime.user_message_id)
        return config, history, runtime, DispatchState.for_conversation(conversation)
    except BaseException as exc:
        interrupt_turn(runtime, _interruption(exc))
        raise


async def run_subtask(
    parent: Runtime, task: str, *, budget_usd: float | None, role: str = "delegate", label: str = ""
) -> TurnOutcome:
    """A delegated task: a fresh history in delegate mode, within the parent's turn, with
    its own pane on the display (named ``label``, if given), working set, plan and budget
    (``_subtask_runtime``). The ``delegate`` role's model runs it (the chat model when
    that role has no row)."""
    config = await in_db_thread(get_model_for_role)(role)
    provider = _provider(role, config)
    child = _subtask_runtime(parent, budget_usd)
    named = {"label": label[:80]} if label else {}
    child.display.send({"type": "subtask_started", "task": task[:200], **named})
    state = await in_db_thread(_open_subtask)(child, parent, task, named)
    outcome = None
    try:
        messages = [{"role": "user", "content": [{"type": "text", "text": task}]}]
        outcome = await _loop(child, state, provider, config, messages, Progress())
        return outcome
    finally:
        state.cancel.release()
        stopped = outcome.stop_reason if outcome is not None else "failed"
        ending = {"stop_reason": stopped, "cost_usd": round(child.budget.spent, 6)}
        child.display.send({"type": "subtask_finished", **ending})
        await asyncio.shield(in_db_thread(_close_subtask)(child, ending))


def _subtask_runtime(parent: Runtime, budget_usd: float | None) -> Runtime:
    """The runtime of a task ``parent`` delegates. Its events and chunks are the turn's,
    marked with its ``subtask`` id (its text never joins the answer); it pages tools into
    a working set of its own (a copy of the parent's), keeps no plan of the parent's, and
    spends from a budget of its own: ``budget_usd``, within what the parent has left."""
    number = next(parent.delegated)
    subtask = f"{parent.log.subtask}.{number}" if isinstance(parent.log, SubtaskLog) else str(number)
    allowance = budget_usd
    if parent.budget_limit is not None:
        left = max(0.0, parent.budget_limit - parent.budget.spent)
        allowance = left if allowance is None else min(allowance, left)
    return replace(
        parent,
        log=SubtaskLog(parent.log, subtask),
        mode="delegate",
        cost=CostTracker(),
        cards=[],
        datasets=dict(parent.datasets),
        failed_delegations=[],
        budget=Budget(parent=parent.budget),
        budget_limit=allowance,
        depth=parent.depth + 1,
        interactive=False,
        # The turn's number makes it unique in the conversation, even after a crash left one behind.
        working_set_scope=f"t{parent.turn}.{subtask}/{parent.working_set_scope}"[:64],
        task_plan={},
        delegated=itertools.count(1),
    )


def _open_subtask(child: Runtime, parent: Runtime, task: str, named: dict) -> DispatchState:
    """A task's database work before its first call: its working set, its start on record."""
    copy_scope(child.conversation.pk, parent.working_set_scope, child.working_set_scope)
    child.recorder.record("subtask_started", {"task": task[:500], "budget_usd": child.budget_limit, **named})
    return DispatchState.for_conversation(child.conversation)


def _close_subtask(child: Runtime, ending: dict) -> None:
    child.recorder.record("subtask_finished", ending)
    drop_scope(child.conversation.pk, child.working_set_scope)


async def _loop(
    runtime: Runtime, state: DispatchState, provider: Any, config: Any, messages: list[dict], progress: Progress
) -> TurnOutcome:
    estimator = stored_estimator(runtime.conversation, config.model)
    runtime.estimator = estimator  # the result budget measures results with it
    new_messages = progress.messages
    nudged = False
    answer = Answer()
    response: LLMResponse | None = None
    for call in range(1, settings.EUNICE_MAX_MODEL_CALLS + 1):
        prepared = (
            None if state.cancel.cancelled else await in_db_thread(_next_request)(runtime, config, messages, estimator)
        )
        if prepared is None:  # cancelled, here or (the conversation's flag) in another process
            return _cancelled(runtime, call - 1, progress, response)
        request, surface, size = prepared
        if request is not None and runtime.budget_limit is not None:
            # Checked before the call is made, with what it is expected to cost.
            estimate = _next_call_cost(config, estimator.tokens(size), response)
            if runtime.budget.spent + estimate > runtime.budget_limit:
                return _over_budget(runtime, call - 1, progress, response, estimate)
        try:
            response, surface, size = await _call_within_context(
                provider, prepared, runtime, state, config, messages, estimator, progress.heard
            )
        except Cancelled:
            return _cancelled(runtime, call - 1, progress, None)
        except LLMError as exc:
            return _failed(runtime, exc, call - 1, progress)
        if response is None:
            text = "This conversation has grown past what the model can read; please start a new one."
            return TurnOutcome(text, "context_full", call - 1, runtime.cost.total, messages=new_messages)
        progress.heard.clear()  # from here on the text is in the message
        estimator.calibrate(size, response.usage.total_input_tokens)
        await in_db_thread(_record_call)(runtime, config, response, surface, estimator)
        message = response.to_message()
        if response.stop_reason == "refusal":
            runtime.recorder.record("status", {"refusal": True})
            text = with_notice(answer.text(response.text), REFUSAL_NOTICE)
            return TurnOutcome(
                text, "refusal", call, runtime.cost.total, messages=[*new_messages, dict(REFUSED_MESSAGE)]
            )
        if message["content"]:  # an empty reply is not stored: the API refuses it in every later request
            messages.append(message)
            new_messages.append(message)
        if response.tool_uses or response.cut_tool_uses:
            results = (
                await _dispatch(response, runtime, state, _offered(provider, surface.entries))
                if response.tool_uses
                else {"role": "user", "content": []}
            )
            if response.cut_tool_uses:
                runtime.recorder.record("status", {"cut_tool_uses": list(response.cut_tool_uses)})
                results["content"].append(cut_tool_note(response.cut_tool_uses, config.max_output_tokens))
            messages.append(results)
            new_messages.append(results)
            if runtime.awaiting:  # a call waits for the person: the turn pauses, their decision resumes it
                runtime.recorder.record("status", {"awaiting_approval": [c["approval_id"] for c in runtime.awaiting]})
                text = answer.text(response.text)
                return TurnOutcome(text, "awaiting_approval", call, runtime.cost.total, messages=new_messages)
            answer.reset()
            continue
        if response.stop_reason in ("pause_turn", "max_tokens"):
            going_on = _go_on(response, answer, runtime)
            if going_on is None:
                text = with_notice(answer.carried, CUT_NOTICE)
                return TurnOutcome(text, "max_tokens", call, runtime.cost.total, messages=new_messages)
            messages.extend(going_on)
            new_messages.extend(going_on)
            continue
        if response.stop_reason in FINAL_STOP_REASONS and not nudged and runtime.mode == "agentic":
            nudge = await in_db_thread(_completion_nudge)(runtime)
            if nudge:
                nudged = True
                messages.append(nudge)
                new_messages.append(nudge)
                continue
        text = answer.text(response.text)
        return TurnOutcome(text, response.stop_reason, call, runtime.cost.total, messages=new_messages)
    text = (response.text if response else "") + f"\n\n(Stopped after {settings.EUNICE_MAX_MODEL_CALLS} model calls.)"
    return TurnOutcome(
        text.strip(), "max_model_calls", settings.EUNICE_MAX_MODEL_CALLS, runtime.cost.total, messages=new_messages
    )


def _go_on(response: LLMResponse, answer: Answer, runtime: Runtime) -> list[dict] | None:
    """The messages that carry a paused or cut-off answer on (see ``conversations.stops``),
    or None when a cut-off answer has had all its continuations."""
    answer.carry(response.text)
    if response.stop_reason == "pause_turn":
        return []  # the paused message, already in history, is sent back as it is
    if not answer.may_continue():
        return None
    runtime.recorder.record("status", {"continued": answer.continuations})
    return [continue_message()]


async def _call_within_context(
    provider: Any,
    prepared: tuple,
    runtime: Runtime,
    state: DispatchState,
    config: Any,
    messages: list[dict],
    estimator: TokenEstimator,
    heard: list[str],
) -> tuple[LLMResponse | None, Surface, int]:
    """The model's answer to ``prepared`` (the request, its surface, its size), or None
    when the conversation does not fit the context window.

    A "prompt is too long" refusal teaches the estimator the provider's count
    (stored, so the next message does not send the same request again), then
    the history is compacted and the call made once more.
    """
    request, surface, size = prepared
    for attempt in range(2):
        if request is None:
            break
        try:
            return await _stream(provider, request, runtime, state, heard), surface, size
        except LLMContextTooLongError as exc:
            estimator.refused(size, exc.prompt_tokens, exc.limit or settings.EUNICE_CONTEXT_TOKENS)
            runtime.recorder.record("status", {"context_too_long": {"prompt_tokens": exc.prompt_tokens}})
            await in_db_thread(store_estimator)(runtime.conversation, config.model, estimator)
            if attempt:
                break
            request, surface, size = await in_db_thread(_build_request)(
                runtime, config, messages, estimator, compact=True
            )
    return None, surface, size


_FLAG_AND_PLAN: Prepared[tuple[Any, dict | None]] = Prepared(
    lambda pk: Conversation.objects.filter(pk=pk).order_by().values_list("cancel_requested_at", "plan")
)


def _next_request(runtime: Runtime, config: Any, messages: list[dict], estimator: TokenEstimator):
    """``_build_request``'s answer, or None when the conversation's cancel flag is
    set (a cancel made in another process). The flag and the plan (as tools
    left it) are read in one query, composed once (every model call reads it)."""
    rows = _FLAG_AND_PLAN(runtime.conversation.pk)
    cancel_requested_at, plan = rows[0] if rows else (None, None)
    if cancel_requested_at is not None:
        return None
    runtime.conversation.plan = plan
    return _build_request(runtime, config, messages, estimator)


def _cancelled(runtime: Runtime, calls: int, progress: Progress, response: LLMResponse | None) -> TurnOutcome:
    """The user's cancel ends the turn: its answer is what the model had said (the text
    streamed so far, or the last reply's), with no note of ours in the model's words;
    the cancel itself is an event and the ``done`` chunk's ``cancelled``."""
    runtime.recorder.record("status", {"cancelled": "by the user"})
    text = progress.partial() or (response.text if response else "")
    return TurnOutcome(text, "cancelled", calls, runtime.cost.total, cancelled=True, messages=progress.kept())


def _next_call_cost(config: Any, input_tokens: int, last: LLMResponse | None) -> float:
    """What the next call is expected to cost: its prompt's estimated tokens, uncached, and
    as much output as the last call of the run produced (none before the first)."""
    output_tokens = last.usage.output_tokens if last is not None else 0
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens).cost_usd(config)


def _over_budget(
    runtime: Runtime, calls: int, progress: Progress, response: LLMResponse | None, estimate: float
) -> TurnOutcome:
    """A run held to its budget (a delegated task's) stops before a call that would cross it;
    the note is for its delegator (it reads the task's answer as a tool result)."""
    spent, limit = runtime.budget.spent, runtime.budget_limit
    runtime.recorder.record(
        "status",
        {"stopped": "budget", "spent_usd": round(spent, 6), "budget_usd": limit, "next_call_usd": round(estimate, 6)},
    )
    note = (
        f"(Stopped: the next model call would cost about ${estimate:.4f}, "
        f"and ${spent:.4f} of the budget of ${limit:.4f} is spent.)"
    )
    text = f"{response.text}\n\n{note}" if response is not None and response.text else note
    return TurnOutcome(text, "budget", calls, runtime.cost.total, messages=progress.kept())


def _failed(runtime: Runtime, exc: LLMError, calls: int, progress: Progress) -> TurnOutcome:
    """A model call failed (after the provider's retries): the error is an event and a chunk,
    never the model's words; the answer is what it had streamed, and its tool calls stay."""
    logger.warning("model call failed in conversation %s: %s", runtime.conversation.pk, exc)
    runtime.recorder.record("error", {"kind": exc.kind, "message": str(exc)})
    runtime.display.send({"type": "error", "message": str(exc)})
    text = progress.partial()
    if runtime.depth:  # a delegated task's answer is its delegator's tool result: say why it stopped
        text = f"{text}\n\n(Stopped: the model call failed: {exc})".strip()
    return TurnOutcome(text, "error", calls, runtime.cost.total, messages=progress.kept(), error=str(exc))


def _well_formed(messages: list[dict]) -> list[dict]:
    """A copy that does not end on tool calls without results: a dangling assistant call
    keeps only its text (what the model said), or goes."""
    kept = list(messages)
    last = kept[-1] if kept else None
    if last is not None and last["role"] == "assistant" and any(b.get("type") == "tool_use" for b in last["content"]):
        said = [b for b in last["content"] if b.get("type") == "text"]
        kept[-1:] = [{**last, "content": said}] if said else []
    return kept


def _build_request(
    runtime: Runtime, config: Any, messages: list[dict], estimator: TokenEstimator, *, compact: bool = False
):
    """The next request (None when even compaction cannot fit the conversation), the
    surface it offers, and its size in characters (for ``estimator.calibrate``).
    The plan is ``runtime.conversation.plan`` as the caller last read it. With
    ``compact``, old tool results are compacted whatever the estimate says (the
    provider has just refused the request as too long)."""
    working_set, paged_order = paged_in(runtime.conversation.pk, runtime.working_set_scope)
    model = config if config.pk else None
    surface = compose_surface(
        runtime.registry,
        runtime.tenant_id,
        mode=runtime.mode,
        conversation_id=runtime.conversation.pk,
        namespace_id=runtime.working_set_scope,
        model=model,
        working_set=working_set,
    )
    definitions = runtime.registry.definitions()
    offered = [definitions[e.name] for e in _cache_stable(surface.entries, paged_order)]
    tools = [d.llm_tool for d in offered]  # made with the snapshot (shared: never changed here)
    window = settings.EUNICE_CONTEXT_TOKENS
    # What compaction cannot shrink; each tool's size was measured with the snapshot.
    fixed = _SYSTEM_CHARS + estimator.array_chars([d.llm_chars for d in offered])
    size = fixed + estimator.chars(messages)
    if compact or estimator.tokens(size) > settings.EUNICE_COMPACT_AT * window:
        compacted = compact_tool_results(messages)
        runtime.recorder.record("status", {"compacted_tool_results": compacted})
        size = fixed + estimator.chars(messages)
        if estimator.tokens(size) > settings.EUNICE_STOP_AT * window:
            return None, surface, size
    state_block = _state_block(runtime, working_set)
    request = LLMRequest.for_model(
        config,
        system=SYSTEM_PROMPT,
        tools=tools,
        messages=_with_state(sendable(messages), state_block),
        capabilities=surface.capabilities,
    )
    return request, surface, size + estimator.chars(state_block)


_SYSTEM_CHARS = TokenEstimator.chars(SYSTEM_PROMPT)


def _cache_stable(entries: list, paged_order: list[str]) -> list:
    """``entries`` with the paged-in tools after the resident ones, in the order they were paged in.

    The tools array is the start of the prompt: calling a paged-in tool makes it
    the most recently used, and offering tools in that order rewrote the prompt
    from its first tool on and voided the cache on every call. In paging order a
    newly paged tool only adds to the end.
    """
    rank = {name: n for n, name in enumerate(paged_order)}
    resident = [e for e in entries if e.reason != "working_set"]
    paged = sorted((e for e in entries if e.reason == "working_set"), key=lambda e: rank.get(e.name, len(rank)))
    return [*resident, *paged]


def _state_block(runtime: Runtime, working_set: list[str]) -> dict:
    return current_state_block(
        plan=(runtime.task_plan if runtime.task_plan is not None else runtime.conversation.plan) or {},
        working_set=working_set,
        datasets=sorted(runtime.datasets),
        cost_usd=runtime.budget.spent,
        budget_limit=runtime.budget_limit,
        handles=runtime.held_results(),
        observations=state_lines(runtime.tenant_id, runtime.user_id),
        skills=runtime.resident_skills(),
    )


def _reload_plan(runtime: Runtime) -> None:
    """The plan as tools left it. (One column; refresh_from_db cost twice as much per call.)"""
    plans = Conversation.objects.filter(pk=runtime.conversation.pk).values_list("plan", flat=True)
    runtime.conversation.plan = plans.first()


def _with_state(messages: list[dict], block: dict) -> list[dict]:
    """A copy whose last user message ends with the state block; history is untouched.
    (After a ``pause_turn`` the paused assistant message follows it, and stays last.)"""
    at = next(i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user")
    last = messages[at]
    content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    return [*messages[:at], {**last, "content": [*content, block]}, *map(_trimmed, messages[at + 1 :])]


def _trimmed(message: dict) -> dict:
    """A final assistant message (a paused turn) as the API takes it: its content may not
    end with whitespace."""
    content = message["content"]
    end = content[-1] if content else {}
    if end.get("type") != "text" or end["text"] == end["text"].rstrip():
        return message
    return {**message, "content": [*content[:-1], {**end, "text": end["text"].rstrip()}]}


async def _stream(
    provider: Any, request: LLMRequest, runtime: Runtime, state: DispatchState, heard: list[str]
) -> LLMResponse:
    """Relay the answer as it streams (its text also into ``heard``); stop within 100 ms of a cancel.

    One task reads the whole stream and races the cancel token once, rather
    than a task and a wait per event: at a few hundred streaming turns the
    per-event version spent more on scheduling than on the text.
    """
    relay = asyncio.ensure_future(_relay(provider.astream(request), runtime.display, heard))
    watcher = asyncio.ensure_future(state.cancel.wait())
    try:
        done, _ = await asyncio.wait({relay, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if relay not in done:
            relay.cancel()
            # Let the cancellation reach the stream (it closes the HTTP
            # response); bounded, so the user is never kept waiting for it.
            await asyncio.wait({relay}, timeout=0.05)
            raise Cancelled
        return relay.result()
    finally:
        watcher.cancel()
        if not relay.done():
            relay.cancel()


async def _relay(events: AsyncIterator, display: Any, heard: list[str]) -> LLMResponse:
    """Send text and thinking to the display as they arrive; the final response.
    ``heard`` gets each piece of text once it was sent: what the user saw."""
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event, TextDelta):
                display.send({"type": "text_delta", "text": event.text})
                heard.append(event.text)
            elif isinstance(event, ThinkingDelta):
                display.send({"type": "thinking", "text": event.thinking})
            elif isinstance(event, MessageStop):
                return event.response
    raise LLMError("the model's stream ended without a final message")


def _record_call(
    runtime: Runtime, config: Any, response: LLMResponse, surface: Surface, estimator: TokenEstimator
) -> None:
    cost = response.usage.cost_usd(config)
    usage = response.usage
    runtime.cost.add(f"llm:{config.model}", cost)
    runtime.budget.spend(cost)
    if response.thinking:
        runtime.recorder.record("thinking", {"text": response.thinking})
    if response.text:
        runtime.recorder.record("text_delta", {"text": response.text})
    runtime.recorder.record(
        "llm_request",
        {
            "model": config.model,
            "provider": config.provider,
            "stop_reason": response.stop_reason,
            "input_tokens": usage.total_input_tokens,
            "cache_read_tokens": usage.cache_read_input_tokens,
            "cache_write_tokens": usage.cache_creation_input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": round(cost, 6),
            **surface_event(surface),
        },
    )
    insert_rows(
        [
            UsageLog(
                tenant_id=runtime.tenant_id,
                user_id=runtime.user_id,
                conversation=runtime.conversation,
                kind=UsageLog.Kind.LLM,
                name=config.model,
                cost_usd=cost,
                input_tokens=usage.total_input_tokens,
                cache_read_tokens=usage.cache_read_input_tokens,
                cache_write_tokens=usage.cache_creation_input_tokens,
                output_tokens=usage.output_tokens,
            )
        ]
    )
    store_estimator(runtime.conversation, config.model, estimator)
    if response.tool_uses and response.stop_reason != "refusal":
        # Its calls are dispatched next: their planning step writes these events with the
        # calls' own, in one statement, once the user has been shown the calls.
        _touch_called(runtime, response, surface)
    else:
        runtime.flush_events()


def _touch_called(runtime: Runtime, response: LLMResponse, surface: Surface) -> None:
    """Mark the paged-in tools the model has just called as used (evicted last). Only a tool
    of the working set the surface was read with has a row to touch (the run's scope is its
    own: nothing else pages tools into it while the model answers), so a call of resident
    tools writes nothing."""
    called = [tool.name for tool in response.tool_uses if tool.name in surface.working_set]
    touch_used(runtime.conversation.pk, runtime.working_set_scope, called)


def _offered(provider: Any, entries: list) -> dict[str, str] | None:
    """The tools the model may call after this request: those it was shown, each with the
    reason it was. None when the calls are the person's own commands (offline mode's
    ``/tool {...}``): theirs to choose."""
    if getattr(provider, "runs_the_persons_commands", False):
        return None
    return {entry.name: entry.reason for entry in entries}


async def _dispatch(
    response: LLMResponse, runtime: Runtime, state: DispatchState, offered: dict[str, str] | None
) -> dict:
    blocks = [{"id": t.id, "name": t.name, "input": t.input} for t in response.tool_uses]
    for block in blocks:  # queued; written with the calls' own events before they run
        runtime.recorder.record(
            "decision",
            {"tool": block["name"], "tool_use_id": block["id"], "reasoning": block["input"].get("reasoning")},
        )
    results = await dispatch_tool_calls(blocks, runtime, state, offered=offered)
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": r.tool_use_id,
                "content": r.content,
                "is_error": r.result.error is not None,
            }
            for r in results
        ],
    }


def _completion_nudge(runtime: Runtime) -> dict | None:
    """Agentic mode's completion guardrails: one reminder if a delegated task did not
    finish or the plan has open steps. Database work (the plan is re-read)."""
    problems = []
    if runtime.failed_delegations:
        failed = list(runtime.failed_delegations)
        runtime.failed_delegations.clear()
        runtime.recorder.record("correction", {"kind": "failed_delegation", "tasks": failed})
        listed = "; ".join(f"{f['task']!r} ({f['stopped']})" for f in failed)
        problems.append(
            f"{len(failed)} delegated task(s) stopped before finishing: {listed}. "
            "Retry them, do the work yourself, or tell the user plainly what is missing."
        )
    _reload_plan(runtime)
    open_steps = [
        s["title"]
        for s in (runtime.conversation.plan or {}).get("steps", [])
        if s.get("status") not in ("done", "skipped")
    ]
    if open_steps:
        runtime.recorder.record("correction", {"kind": "incomplete_plan", "open_steps": open_steps})
        problems.append(
            f"Your plan still has {len(open_steps)} open step(s): {'; '.join(open_steps)}. "
            "Finish them, or mark them done or skipped with the plan tool, before you answer."
        )
    if not problems:
        return None
    return {"role": "user", "content": [{"type": "text", "text": " ".join(problems)}]}

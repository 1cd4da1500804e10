"""The agentic loop: model call → tool calls → model call … until the model answers.

One user message is one *turn* (numbered, recorded, replayable); inside it the
loop makes up to ``EUNICE_MAX_MODEL_CALLS`` model calls. Everything that
touches the database runs off the event loop (``_db``); streaming, tool
dispatch and cancellation are awaited, so nothing blocks other conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from conversations.context import store_estimator, stored_estimator
from conversations.dispatcher import dispatch_tool_calls
from conversations.history import load_history, sendable
from conversations.inserts import insert_rows
from conversations.models import Conversation, UsageLog
from conversations.prompt import SYSTEM_PROMPT, TokenEstimator, compact_tool_results, current_state_block
from conversations.runtime import Runtime
from conversations.state import DispatchState
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
from conversations.turn_reservations import heartbeat
from conversations.turns import begin_turn, finish_turn, interrupt_turn
from conversations.working_set import paged_in
from llm import LLMContextTooLongError, LLMError, LLMRequest, LLMResponse, MessageStop, TextDelta, ThinkingDelta
from llm.roles import create_llm_client_for_role, get_model_for_role
from registry.aio import in_db_thread
from registry.surface import Surface, compose_surface, surface_event, touch_used

logger = logging.getLogger("eunice.conversations")

FINAL_STOP_REASONS = frozenset({"end_turn", "max_tokens", "stop_sequence", "refusal"})


@dataclass
class TurnOutcome:
    text: str
    stop_reason: str
    model_calls: int
    cost_usd: float
    cancelled: bool = False
    messages: list[dict] = field(default_factory=list)


class Cancelled(Exception):
    """The user cancelled while the model was answering."""


async def run_turn(
    conversation: Conversation,
    *,
    text: str,
    user: Any = None,
    display: Any = None,
    mode: str | None = None,
    role: str = "chat",
    interactive: bool = False,
) -> TurnOutcome:
    """Answer one user message, calling tools as the model asks; returns when done.

    Raises ``TurnInProgress`` (before anything is stored) when a turn of the
    conversation is already running. A turn that raises or is cancelled is
    closed as interrupted, keeping what it did; the exception goes on.
    """
    config, history, runtime, state = await in_db_thread(_open_turn)(
        conversation, role, user=user, user_message=text, display=display, mode=mode, interactive=interactive
    )
    beats = asyncio.ensure_future(heartbeat(conversation.pk, runtime.turn))
    try:
        provider = create_llm_client_for_role(role, model=config)
        messages = [*history, {"role": "user", "content": [{"type": "text", "text": text}]}]
        try:
            outcome = await _loop(runtime, state, provider, config, messages)
        except LLMError as exc:
            logger.warning("model call failed in conversation %s: %s", conversation.pk, exc)
            runtime.recorder.record("error", {"kind": exc.kind, "message": str(exc)})
            runtime.display.send({"type": "error", "message": str(exc)})
            outcome = TurnOutcome(f"The model could not answer: {exc}", "error", 0, runtime.cost.total)
        finally:
            state.cancel.release()
        await in_db_thread(finish_turn)(runtime, outcome.text, outcome.messages)
    except BaseException as exc:
        # An unexpected error (or the task's cancellation) ends the turn here:
        # close it as interrupted, keeping the events it recorded.
        await asyncio.shield(in_db_thread(interrupt_turn)(runtime, _interruption(exc)))
        raise
    finally:
        beats.cancel()
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


def _interruption(exc: BaseException) -> str:
    """Why a turn stopped, for its ``interrupted`` event: the kind of failure, never its message
    (which may quote a secret); the traceback goes to the server log."""
    if isinstance(exc, asyncio.CancelledError):
        return "the turn was stopped before it finished (its task was cancelled)"
    return f"the turn failed with an internal error ({type(exc).__name__}); the details are in the server log"


def _open_turn(conversation: Conversation, role: str, **begin: Any):
    """A turn's opening database work as one step: the role's model, the history
    (read before the new message joins it), the new turn, the dispatch state.
    One hop to a database thread instead of four: when many turns start at
    once, every hop is another wait for the GIL, and another time the event
    loop waits for it back while it relays the answers already streaming."""
    config = get_model_for_role(role)
    history = load_history(conversation)
    runtime = begin_turn(conversation, **begin)
    try:
        return config, history, runtime, DispatchState.for_conversation(conversation)
    except BaseException as exc:
        interrupt_turn(runtime, _interruption(exc))
        raise


async def run_subtask(parent: Runtime, task: str, *, budget_usd: float | None, role: str = "chat") -> TurnOutcome:
    """A delegated task: a fresh history, delegate mode, the parent's turn, events and budget."""
    from dataclasses import replace

    from conversations.state import CostTracker

    config = await in_db_thread(get_model_for_role)(role)
    provider = create_llm_client_for_role(role, model=config)
    limit = budget_usd if parent.budget_limit is None else min(budget_usd or parent.budget_limit, parent.budget_limit)
    child = replace(
        parent,
        mode="delegate",
        cost=CostTracker(),
        cards=[],
        datasets=dict(parent.datasets),
        failed_delegations=[],
        budget_limit=(parent.budget.spent + limit) if limit is not None else None,
        depth=parent.depth + 1,
        interactive=False,
    )
    state = await in_db_thread(DispatchState.for_conversation)(parent.conversation)
    try:
        messages = [{"role": "user", "content": [{"type": "text", "text": task}]}]
        return await _loop(child, state, provider, config, messages)
    finally:
        state.cancel.release()


async def _loop(
    runtime: Runtime, state: DispatchState, provider: Any, config: Any, messages: list[dict]
) -> TurnOutcome:
    estimator = stored_estimator(runtime.conversation, config.model)
    new_messages: list[dict] = []
    nudged = False
    answer = Answer()
    response: LLMResponse | None = None
    for call in range(1, settings.EUNICE_MAX_MODEL_CALLS + 1):
        prepared = (
            None if state.cancel.cancelled else await in_db_thread(_next_request)(runtime, config, messages, estimator)
        )
        if prepared is None:  # cancelled, here or (the conversation's flag) in another process
            return _cancelled(runtime, call - 1, new_messages, response)
        if runtime.budget_limit is not None and runtime.budget.spent >= runtime.budget_limit:
            text = (
                response.text if response else ""
            ) + f"\n\n(Stopped: the budget of ${runtime.budget_limit:.4f} is spent.)"
            return TurnOutcome(text.strip(), "budget", call - 1, runtime.cost.total, messages=new_messages)
        try:
            response, surface, size = await _call_within_context(
                provider, prepared, runtime, state, config, messages, estimator
            )
        except Cancelled:
            return _cancelled(runtime, call - 1, new_messages, None)
        if response is None:
            text = "This conversation has grown past what the model can read; please start a new one."
            return TurnOutcome(text, "context_full", call - 1, runtime.cost.total, messages=new_messages)
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
            return await _stream(provider, request, runtime, state), surface, size
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


def _next_request(runtime: Runtime, config: Any, messages: list[dict], estimator: TokenEstimator):
    """``_build_request``'s answer, or None when the conversation's cancel flag is
    set (a cancel made in another process). The flag and the plan (as tools
    left it) are read in one query."""
    row = Conversation.objects.filter(pk=runtime.conversation.pk).values_list("cancel_requested_at", "plan").first()
    cancel_requested_at, plan = row or (None, None)
    if cancel_requested_at is not None:
        return None
    runtime.conversation.plan = plan
    return _build_request(runtime, config, messages, estimator)


def _cancelled(runtime: Runtime, calls: int, new_messages: list[dict], response: LLMResponse | None) -> TurnOutcome:
    partial = response.text if response else ""
    return TurnOutcome(
        (partial + "\n\n(Cancelled.)").strip(),
        "cancelled",
        calls,
        runtime.cost.total,
        cancelled=True,
        messages=_well_formed(new_messages),
    )


def _well_formed(messages: list[dict]) -> list[dict]:
    """History must not end on tool calls without results: drop a dangling assistant call."""
    if (
        messages
        and messages[-1]["role"] == "assistant"
        and any(b.get("type") == "tool_use" for b in messages[-1]["content"])
    ):
        return messages[:-1]
    return messages


def _build_request(
    runtime: Runtime, config: Any, messages: list[dict], estimator: TokenEstimator, *, compact: bool = False
):
    """The next request (None when even compaction cannot fit the conversation), the
    surface it offers, and its size in characters (for ``estimator.calibrate``).
    The plan is ``runtime.conversation.plan`` as the caller last read it. With
    ``compact``, old tool results are compacted whatever the estimate says (the
    provider has just refused the request as too long)."""
    working_set, paged_order = paged_in(runtime.conversation.pk, runtime.conversation.namespace_id)
    surface = compose_surface(
        runtime.registry,
        runtime.tenant_id,
        mode=runtime.mode,
        conversation_id=runtime.conversation.pk,
        namespace_id=runtime.conversation.namespace_id,
        model=config if config.pk else None,
        working_set=working_set,
    )
    definitions = runtime.registry.definitions()
    tools = [
        {"name": e.name, "description": definitions[e.name].description, "input_schema": definitions[e.name].llm_schema}
        for e in _cache_stable(surface.entries, paged_order)
    ]
    window = settings.EUNICE_CONTEXT_TOKENS
    fixed = estimator.chars(SYSTEM_PROMPT, tools)  # what compaction cannot shrink
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
    )
    return request, surface, size + estimator.chars(state_block)


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
        plan=runtime.conversation.plan or {},
        working_set=working_set,
        datasets=sorted(runtime.datasets),
        cost_usd=runtime.cost.total,
        budget_limit=runtime.budget_limit,
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


async def _stream(provider: Any, request: LLMRequest, runtime: Runtime, state: DispatchState) -> LLMResponse:
    """Relay the answer as it streams; stop within 100 ms of a cancel.

    One task reads the whole stream and races the cancel token once, rather
    than a task and a wait per event: at a few hundred streaming turns the
    per-event version spent more on scheduling than on the text.
    """
    relay = asyncio.ensure_future(_relay(provider.astream(request), runtime.display))
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


async def _relay(events: AsyncIterator, display: Any) -> LLMResponse:
    """Send text and thinking to the display as they arrive; the final response."""
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event, TextDelta):
                display.send({"type": "text_delta", "text": event.text})
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
    runtime.flush_events()


def _offered(provider: Any, entries: list) -> frozenset[str] | None:
    """The tools the model may call after this request: those it was shown. None when the
    calls are the person's own commands (offline mode's ``/tool {...}``): theirs to choose."""
    if getattr(provider, "runs_the_persons_commands", False):
        return None
    return frozenset(entry.name for entry in entries)


async def _dispatch(
    response: LLMResponse, runtime: Runtime, state: DispatchState, offered: frozenset[str] | None
) -> dict:
    blocks = [{"id": t.id, "name": t.name, "input": t.input} for t in response.tool_uses]
    for block in blocks:  # queued; written with the calls' own events before they run
        runtime.recorder.record(
            "decision",
            {"tool": block["name"], "tool_use_id": block["id"], "reasoning": block["input"].get("reasoning")},
        )
    conversation = runtime.conversation
    await in_db_thread(touch_used)(conversation.pk, conversation.namespace_id, [b["name"] for b in blocks])
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

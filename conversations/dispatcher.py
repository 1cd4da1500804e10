"""The dispatcher: between the model's tool_use blocks and the registry.

Per call it checks the loop guard and the policy rules, in the model's order, and
leaves the verdict with the turn's gate (conversations.ports.TurnGate), which the
registry's pre-dispatch gate consults; it runs the tool through ``aexecute_tool``
raced against the user's cancel, and routes the result's
side channels (exports, datasets, cards, cost). Several calls of one turn run
concurrently up to ``Runtime.parallel_limit``; results keep the model's order.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from conversations.policies import Violation, check_policies, count_violation, format_policy_warnings
from conversations.ports import TurnGate
from conversations.result_budget import within_budget
from conversations.runtime import Runtime
from conversations.side_effects import route_side_effects
from conversations.state import CallCancel, DispatchState
from conversations.timeline import result_outcome
from registry.aio import in_db_thread
from registry.context import ToolContext
from registry.contract import Err, Hint
from registry.result import ToolResult
from registry.snapshot import redacted

logger = logging.getLogger("eunice.conversations")

# Free-text keys that explain a call rather than define it: two calls that
# differ only here are the same call.
NARRATION_KEYS = frozenset({"reasoning", "explanation", "thought", "rationale", "justification"})
LOOP_GUARD_THRESHOLD = 3  # identical calls allowed in a row; the next is refused
REPEAT_FAILURE_THRESHOLD = 3
NOT_OFFERED_ALTERNATIVES = 5  # alternatives carried in a not-offered Hint (the message names them all)


@dataclass
class DispatchResult:
    tool_use_id: str
    name: str
    result: ToolResult
    duration_ms: float
    policy_warnings: str = ""

    @property
    def content(self) -> str:
        """What the model reads in the tool_result block."""
        return "\n\n".join(part for part in (self.result.content, self.policy_warnings) if part)


@dataclass
class _Planned:
    block: dict
    hash: str
    refusal: Err | None
    warnings: str
    started: float
    status_message: str  # shown with the call and again with its result
    not_offered: Hint | None = None  # the tool was not on this call's surface: answered, never run
    surface_reason: str = ""  # why it was on the surface (registry.surface), for its span
    shown: bool = False  # its tool_result is already on the display (a call cancelled on its own)


def args_hash(tool_name: str, tool_input: dict | None) -> str:
    """Stable 16-character SHA-256 prefix of the tool name and its operative arguments."""
    operative = {k: v for k, v in (tool_input or {}).items() if k not in NARRATION_KEYS}
    canonical = json.dumps([tool_name, operative], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def repeat_failure_hint(
    tool_name: str, args_h: str, state: DispatchState, threshold: int = REPEAT_FAILURE_THRESHOLD
) -> str:
    """A nudge once the same call has failed ``threshold`` times; never stops the loop."""
    for approach in state.failed_approaches:
        if approach["tool"] == tool_name and approach["args_hash"] == args_h and approach["attempts"] >= threshold:
            return (
                f"⚠ This exact {tool_name} call has failed {approach['attempts']} times "
                f"(last: {approach['reason']}). Consider a different approach."
            )
    return ""


def record_failed_approach(tool_name: str, args_h: str, reason: str, state: DispatchState) -> None:
    """Note a failure; a repeat of the same call increments its attempts (idempotent shape)."""
    for approach in state.failed_approaches:
        if approach["tool"] == tool_name and approach["args_hash"] == args_h:
            approach["attempts"] += 1
            approach["reason"] = reason[:300]
            return
    state.failed_approaches.append({"tool": tool_name, "args_hash": args_h, "reason": reason[:300], "attempts": 1})


def forget_failed_approach(tool_name: str, args_h: str, state: DispatchState) -> bool:
    """The call succeeded: its failures no longer say it keeps failing. True when one was forgotten."""
    kept = [a for a in state.failed_approaches if not (a["tool"] == tool_name and a["args_hash"] == args_h)]
    forgotten = len(kept) != len(state.failed_approaches)
    state.failed_approaches[:] = kept
    return forgotten


async def dispatch_tool_call(block: dict, runtime: Runtime, state: DispatchState) -> DispatchResult:
    """Run one tool_use block ``{id, name, input}``."""
    return (await dispatch_tool_calls([block], runtime, state))[0]


async def dispatch_tool_calls(
    blocks: list[dict], runtime: Runtime, state: DispatchState, *, offered: Mapping[str, str] | None = None
) -> list[DispatchResult]:
    """Run a turn's tool_use blocks, concurrently where allowed, results in the model's order.

    A tool registered as sequential runs on its own; the calls around it run
    before and after it, in order. ``offered`` is the surface the model was shown
    for this call, each tool with the reason it was there: a call of any other tool
    is answered with a Hint naming the offered ones, and never runs. None (a command the person typed) checks nothing.
    """
    results: list[DispatchResult] = []
    gate = TurnGate(runtime, state)
    groups: list[list[dict]] | None = None  # split in the first group's planning step
    index = 0
    while blocks and (groups is None or index < len(groups)):
        cancels: dict[str, CallCancel] = {}
        try:
            groups, planned = await in_db_thread(_plan_group)(blocks, groups, index, runtime, state, offered, cancels)
            limit = asyncio.Semaphore(max(1, runtime.parallel_limit))
            for item in planned:
                gate.plan(item.block["id"], item.refusal)

            async def run(item: _Planned, cancel: CallCancel, limit: asyncio.Semaphore = limit) -> ToolResult:
                async with limit:
                    return await _execute(item, runtime, gate, cancel)

            outcomes = await asyncio.gather(*(run(item, cancels[item.block["id"]]) for item in planned))
        finally:
            for cancel in cancels.values():
                cancel.release()
        results += await in_db_thread(_settle_group)(planned, outcomes, runtime, state)
        index += 1
    return results


def _groups(blocks: list[dict], runtime: Runtime) -> list[list[dict]]:
    # Load the definitions (and with them the system handlers) first: whether a
    # tool is sequential is known only once its handler is registered.
    runtime.registry.definitions()
    groups: list[list[dict]] = []
    for block in blocks:
        if runtime.registry.is_sequential(block["name"]):
            groups += [[block]]
        elif groups and not any(runtime.registry.is_sequential(b["name"]) for b in groups[-1]):
            groups[-1].append(block)
        else:
            groups.append([block])
    return groups


def _plan_group(
    blocks: list[dict],
    groups: list[list[dict]] | None,
    index: int,
    runtime: Runtime,
    state: DispatchState,
    offered: Mapping[str, str] | None,
    cancels: dict[str, CallCancel],
) -> tuple[list[list[dict]], list[_Planned]]:
    """The checks of group ``index`` of ``blocks``, made before anything runs, in the model's
    order; their events are written. ``groups`` None: the blocks are split into groups
    first, in this same step (one database hop fewer per batch). Returns the groups and
    the planned calls; each call's cancel goes into ``cancels`` before the user is shown
    the call, so from then on each can be cancelled on its own."""
    if groups is None:
        groups = _groups(blocks, runtime)
    group = groups[index]
    cancels.update({b["id"]: CallCancel(state.cancel, runtime.conversation.pk, b["id"]) for b in group})
    planned = [_plan(block, runtime, state, offered) for block in group]
    if offered is not None:
        for item in planned:
            item.surface_reason = offered.get(item.block["name"], "")
    runtime.flush_events()
    return groups, planned


def _plan(block: dict, runtime: Runtime, state: DispatchState, offered: Mapping[str, str] | None) -> _Planned:
    name, inputs = block["name"], block.get("input") or {}
    started = time.perf_counter()
    definition = runtime.registry.definitions().get(name)
    runtime.recorder.record(
        "tool_call",
        {
            "tool_use_id": block["id"],
            "name": name,
            "input": redacted(inputs, definition),
            "turn": runtime.turn,
        },
    )
    status_message = definition.status_message if definition else ""
    runtime.display.send(
        {"type": "tool_call", "tool_use_id": block["id"], "name": name, "status_message": status_message}
    )
    h = args_hash(name, inputs)
    if offered is not None and name not in offered:
        return _Planned(block, h, None, "", started, status_message, not_offered=not_offered_hint(name, offered))
    state.repeat_count = state.repeat_count + 1 if h == state.last_hash else 1
    state.last_hash = h
    if state.repeat_count > LOOP_GUARD_THRESHOLD:
        looping = Err(
            f"refused: this is call {state.repeat_count} in a row of {name} with the same arguments; "
            "the result will not change. Use what you have or try a different approach.",
            "LoopGuard",
        )
        return _Planned(block, h, looping, "", started, status_message)
    refusal, warnings = policy_refusal(name, runtime, state)
    hint = repeat_failure_hint(name, h, state)
    return _Planned(block, h, refusal, "\n".join(p for p in (warnings, hint) if p), started, status_message)


def not_offered_hint(name: str, offered: Iterable[str]) -> Hint:
    """The answer to a call of a tool the model was not offered: the offered tools, closest first."""
    matcher = difflib.SequenceMatcher(b=name.lower())
    scored = []
    for candidate in offered:
        matcher.set_seq1(candidate.lower())
        scored.append((round(matcher.ratio(), 2), candidate))
    scored.sort(key=lambda item: (-item[0], item[1]))
    names = ", ".join(candidate for _, candidate in scored) or "none"
    return Hint(
        "schema",
        f"{name} is not one of the tools offered to you now; the tools you may call are: {names}",
        [{"label": candidate, "score": score} for score, candidate in scored[:NOT_OFFERED_ALTERNATIVES]],
    )


def policy_refusal(name: str, runtime: Runtime, state: DispatchState) -> tuple[Err | None, str]:
    """The policy rules' verdict on a call of ``name`` now: a refusal when one blocks,
    and the warnings of those that do not. Their violations are recorded and counted."""
    violations = _violations(name, runtime, state)
    blocked = [v for v in violations if v.blocking]
    refusal = Err(f"refused by policy: {blocked[0].detail}", "PolicyBlocked") if blocked else None
    return refusal, format_policy_warnings(violations)


def _violations(name: str, runtime: Runtime, state: DispatchState) -> list[Violation]:
    found = check_policies(
        name,
        tenant_id=runtime.tenant_id,
        capabilities=runtime.capabilities,
        succeeded_tools=state.succeeded_tools,
        calls_so_far=state.calls_by_tool[name],
    )
    counted = []
    for violation in found:
        occurrence = count_violation(
            violation, conversation_id=runtime.conversation.pk, tenant_id=runtime.tenant_id, user_id=runtime.user_id
        )
        counted.append(replace(violation, occurrence=occurrence))
        runtime.recorder.record(
            "policy_violation",
            {
                "tool": name,
                "rule": violation.rule_name,
                "kind": violation.kind,
                "detail": violation.detail,
                "blocking": violation.blocking,
                "occurrence": occurrence,
            },
        )
    return counted


async def _execute(item: _Planned, runtime: Runtime, gate: TurnGate, cancel: CallCancel) -> ToolResult:
    """The call through the registry (whose gate refuses what ``_plan`` refused), raced
    against a cancel of the call or of its turn."""
    block = item.block
    context = runtime.tool_context(block["id"], block["name"], cancel, gate, item.surface_reason)
    if item.not_offered is not None:
        return await in_db_thread(runtime.registry.refuse)(block["name"], block.get("input"), context, item.not_offered)
    if item.refusal is not None:  # the gate refuses it at once: nothing to race
        return await runtime.registry.aexecute_tool(block["name"], block.get("input"), context)
    if cancel.cancelled:
        return await _cancelled(block, runtime, context)
    task = asyncio.ensure_future(runtime.registry.aexecute_tool(block["name"], block.get("input"), context))
    watchers = {asyncio.ensure_future(cancel.turn.wait()), asyncio.ensure_future(cancel.own.wait())}
    done, _ = await asyncio.wait({task, *watchers}, return_when=asyncio.FIRST_COMPLETED)
    for watcher in watchers:
        watcher.cancel()
    if task in done:
        return task.result()
    # The user stopped waiting; a tool running in a thread finishes (or not)
    # on its own (registry.workers writes its thread off), one in a process is
    # killed through context.cancel.
    task.cancel()
    result = await _cancelled(block, runtime, context)
    if not cancel.turn.cancelled:  # this call alone: the user sees it stop now, not when the others finish
        runtime.display.send(_result_chunk(item, result, result.content))
        item.shown = True
    return result


async def _cancelled(block: dict, runtime: Runtime, context: ToolContext) -> ToolResult:
    envelope = Err("cancelled by the user before the tool finished", "Cancelled")
    return await in_db_thread(runtime.registry.refuse)(block["name"], block.get("input"), context, envelope)


def _settle_group(
    planned: list[_Planned], outcomes: list[ToolResult], runtime: Runtime, state: DispatchState
) -> list[DispatchResult]:
    results = []
    remembered_changed = False
    for item, result in zip(planned, outcomes, strict=True):
        name = item.block["name"]
        state.calls_by_tool[name] += 1
        if result.error is None:
            state.succeeded_tools.add(name)
            remembered_changed |= forget_failed_approach(name, item.hash, state)
        else:
            record_failed_approach(name, item.hash, result.error, state)
            remembered_changed = True
        result = within_budget(name, item.block["id"], result, runtime)
        shown = route_side_effects(name, result, runtime)
        duration = (time.perf_counter() - item.started) * 1000
        dispatched = DispatchResult(item.block["id"], name, result, duration, item.warnings)
        runtime.recorder.record(
            "tool_result",
            {
                "tool_use_id": item.block["id"],
                "name": name,
                "content": dispatched.content,
                "error": result.error,
                "duration_ms": round(duration, 3),
            },
        )
        if not item.shown:
            runtime.display.send(_result_chunk(item, result, dispatched.content))
        for chunk in shown:  # its cards and datasets, after the result they came with
            runtime.display.send({**chunk, "tool_use_id": item.block["id"]})
        results.append(dispatched)
    if remembered_changed:  # nothing new to remember otherwise
        _save_failed_approaches(state)
    runtime.flush_events()
    return results


def _result_chunk(item: _Planned, result: ToolResult, content: str) -> dict:
    return {
        "type": "tool_result",
        "tool_use_id": item.block["id"],
        "name": item.block["name"],
        "status_message": item.status_message,
        "content": content,
        "error": result.error is not None,
        **result_outcome(content, result.error is not None),
    }


def _save_failed_approaches(state: DispatchState) -> None:
    from conversations.models import Conversation

    Conversation.objects.filter(pk=state.conversation.pk).update(failed_approaches=state.failed_approaches)

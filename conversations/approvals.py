"""A person's decision on a pending tool call, from the chat page or REST.

``decide`` is what the websocket consumer and the REST view call: it decides
the row (registry.approvals): approve, edit (approve the person's arguments) or
reject; runs an approved call through the one dispatch path; and puts the outcome
into the conversation. A call an approval rule made wait paused its turn: the
decision resumes it (the caller runs the next turn with the decision as its
message, which the model reads). A call a tool asked about itself (an MCP
install) is reported as a turn of its own: a message the model reads on its
next turn, a ``decision`` event, and a chunk to every open tab.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db.models import Max, QuerySet
from django.utils import timezone

from conversations.display import group_name
from conversations.effects import effect_to_dict
from conversations.inserts import insert_rows
from conversations.models import ChatMessage, Conversation, TurnRecord
from conversations.runtime import start_run
from eunice.db.prepared import Prepared
from eunice.jsonlimits import JSONTooDeep, check_depth
from registry import approvals
from registry.context import ToolContext
from registry.contract import Err
from registry.models import ApprovalSource, ApprovalStatus, PendingApproval
from registry.registry import get_registry
from registry.tenancy import tenant_of
from registry.validation import InputError, validator_for

DECISIONS = ("approve", "edit", "reject")
MAX_EDITED_CHARS = 20_000  # the edited arguments, as JSON


def decide(
    approval_id: str,
    decision: str,
    *,
    acting_user: Any,
    expected_hash: str | None,
    reason: str = "",
    conversation_id: str | None = None,
    arguments: Any = None,
) -> dict:
    """Approve, edit (approve with the person's ``arguments``) or reject one pending call;
    returns its card as it stands after.

    An approval this click made runs the call, as the person who approved it,
    through ``execute_tool``; a repeated click runs nothing again. A click from
    a conversation's page passes ``conversation_id``: only its calls. Blocks for
    as long as the call runs.

    A call an approval rule made wait (``source`` rule) paused its turn: the card
    then carries ``resume``, the message and event the caller resumes the turn with
    (``run_turn(..., text=resume["text"], events=resume["events"])``; ``report`` when
    it cannot). A call a tool asked about itself is reported at once, as a turn of its own.

    Raises ValueError for an unknown decision or edited arguments that are no JSON
    object, and ApprovalNotFound, PermissionDenied or ApprovalConflict as the services do.
    """
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}; expected 'approve', 'edit' or 'reject'")
    if decision in ("approve", "edit") and not expected_hash:
        raise approvals.ApprovalConflict("an approval needs the args_hash of the call you were shown")
    if decision == "approve":
        row, fresh = approvals.approve(
            approval_id, acting_user=acting_user, expected_hash=expected_hash or "", conversation_id=conversation_id
        )
    elif decision == "edit":
        row, fresh = _approve_edited(approval_id, acting_user, expected_hash or "", arguments, conversation_id)
    else:
        row, fresh = approvals.reject(
            approval_id,
            acting_user=acting_user,
            expected_hash=expected_hash,
            reason=reason,
            conversation_id=conversation_id,
        )
    card = {**approvals.card(row), "outcome": row.outcome}
    if not fresh:
        return card
    outcome = ""
    if row.status == ApprovalStatus.APPROVED:
        outcome = get_registry().execute_tool(row.tool_name, row.arguments, approvals.context_for(row)).content
    elif row.source == ApprovalSource.RULE:  # the execution log shows the call that did not run, and why
        why = f"rejected by {acting_user.get_username()}" + (f": {row.reason}" if row.reason else "")
        _log_not_run(row, Err(why, "ApprovalRejected"))
    row = approvals.record_outcome(row, outcome)
    card = {**approvals.card(row), "outcome": row.outcome}
    if row.source != ApprovalSource.RULE:
        report(row, acting_user)
        return card
    if not row.conversation_id:  # no turn to resume (a call from REST or the MCP endpoint): the row tells
        return card
    announce(row)
    return {**card, "resume": {"text": _message(row), "events": (("decision", _decision_event(row, acting_user)),)}}


def _approve_edited(
    approval_id: str, acting_user: Any, expected_hash: str, arguments: Any, conversation_id: str | None
) -> tuple[PendingApproval, bool]:
    if not isinstance(arguments, dict):
        raise ValueError('edited \'arguments\' must be a JSON object, e.g. {"query": "plan"}')
    try:
        check_depth(arguments, what="the edited arguments")
    except JSONTooDeep as exc:
        raise ValueError(str(exc)) from None
    if len(json.dumps(arguments, default=str)) > MAX_EDITED_CHARS:
        raise ValueError(f"the edited arguments are longer than {MAX_EDITED_CHARS:,} characters as JSON")
    pending = approvals.find(approval_id, tenant_of(acting_user) or "").values_list("tool_name", "shown").first()
    if pending is None:
        raise approvals.ApprovalNotFound(f"no approval {str(approval_id)[:40]!r}")
    tool_name, shown = pending
    definition = get_registry().definitions().get(tool_name)
    if definition is not None:
        try:
            validator_for(definition.input_schema, definition.schema_key)(arguments)
        except InputError as exc:
            raise ValueError(f"the edited arguments are not valid for {tool_name}: {exc}") from None
    return approvals.approve_edited(
        approval_id,
        acting_user=acting_user,
        expected_hash=expected_hash,
        arguments=arguments,
        shown={**shown, "arguments": arguments, "edited": True},
        conversation_id=conversation_id,
    )


def _log_not_run(row: PendingApproval, envelope: Err) -> None:
    context = ToolContext(
        tenant_id=row.tenant_id, user_id=str(row.decided_by_id or row.user_id), conversation_id=row.conversation_id
    )
    get_registry().refuse(row.tool_name, row.arguments, context, envelope)


def _decision_event(row: PendingApproval, acting_user: Any) -> dict:
    return {
        "approval": str(row.pk),
        "tool": row.tool_name,
        "status": row.status,
        "args_hash": row.args_hash,
        "edited": row.original_arguments is not None,
        "decided_by": acting_user.get_username() if acting_user is not None else "",
        "outcome": row.outcome[:2000],
    }


def announce(row: PendingApproval) -> None:
    """Tell every open page of the conversation how the call was decided."""
    if not row.conversation_id:
        return
    chunk = {"type": "approval_decided", "card": {**approvals.card(row), "outcome": row.outcome}, "text": _message(row)}
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(row.conversation_id), {"type": "conversation.chunk", "chunk": chunk})


# A conversation's approvals still pending; composed once (every turn reads it).
_PENDING: Prepared[PendingApproval] = Prepared(
    lambda tenant_id, conversation_id: PendingApproval.objects.filter(
        tenant_id=tenant_id, conversation_id=conversation_id, status=ApprovalStatus.PENDING
    )
)


def expire_overdue(conversation: Conversation) -> int:
    """Close the conversation's approvals nobody decided in time; each is reported (the model
    reads that it did not run) and logged. Returns how many. (Its pending rows are few: which
    are overdue is decided here, so that the read is the same every turn.)"""
    now = timezone.now()
    pending = _PENDING(conversation.tenant_id, conversation.pk)
    return _expire([row for row in pending if row.expires_at <= now], now)


def expire_overdue_among(rows: QuerySet[PendingApproval]) -> int:
    """``expire_overdue`` for any set of rows (a REST listing across conversations), so that
    no reader is shown as pending a call whose time is up. Returns how many this process closed."""
    now = timezone.now()
    return _expire(rows.filter(status=ApprovalStatus.PENDING, expires_at__lte=now), now)


def _expire(overdue: Iterable[PendingApproval], now: datetime) -> int:
    """Close each of the ``overdue`` rows that no other process has; how many this one closed."""
    closed = 0
    for row in overdue:
        taken = PendingApproval.objects.filter(pk=row.pk, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.EXPIRED, decided_at=now
        )
        if not taken:
            continue  # another process closed it
        closed += 1
        row.status, row.decided_at = ApprovalStatus.EXPIRED, now
        _log_not_run(row, Err("nobody decided in time; the approval expired", "ApprovalExpired"))
        report(row, row.user)
    return closed


def report(row: PendingApproval, acting_user: Any, *, tell: bool = True) -> None:
    """Put the decision into its conversation (if it has one) and on its open pages."""
    conversation = Conversation.objects.filter(pk=row.conversation_id, tenant_id=row.tenant_id).first()
    if conversation is None:
        return
    text = _message(row)
    turn = _next_turn(conversation)
    insert_rows(
        [
            ChatMessage(
                conversation=conversation,
                message_id=uuid.uuid4().hex,
                tenant_id=conversation.tenant_id,
                role=ChatMessage.Role.USER,
                text=text,
            )
        ]
    )
    runtime = start_run(conversation, user=acting_user, turn=turn, user_message=text)
    runtime.recorder.record("decision", _decision_event(row, acting_user))
    runtime.flush_events()
    insert_rows(
        [
            TurnRecord(
                conversation=conversation, turn=turn, effects=[effect_to_dict(effect) for effect in runtime.log.close()]
            )
        ]
    )
    if tell:
        announce(row)


def report_by_id(approval_id: str, acting_user: Any) -> None:
    """``report`` for a decided row the caller knows by id (a resume that could not start)."""
    row = approvals.find(approval_id).first()
    if row is not None:
        report(row, acting_user, tell=False)  # the pages were told when it was decided


def pending_cards(conversation: Conversation) -> list[dict]:
    """The cards of the calls in ``conversation`` still waiting for a click (a reload shows them again)."""
    expire_overdue(conversation)
    rows = (
        PendingApproval.objects.for_tenant(conversation.tenant_id).undecided().filter(conversation_id=conversation.pk)
    )
    return [approvals.card(row) for row in rows]


def _next_turn(conversation: Conversation) -> int:
    # Past both the stored turns and any turn still running (its events are
    # written before its record): a click during a turn never takes its number.
    recorded = conversation.turns.aggregate(n=Max("turn"))["n"] or 0
    running = conversation.events.aggregate(n=Max("turn"))["n"] or 0
    return max(recorded, running) + 1


def _message(row: PendingApproval) -> str:
    call = f"{row.tool_name} {json.dumps(row.arguments, sort_keys=True, ensure_ascii=False)}"
    if row.status == ApprovalStatus.APPROVED and row.original_arguments is not None:
        asked = json.dumps(row.original_arguments, sort_keys=True, ensure_ascii=False)
        return (
            f"[Approval] I edited your call (you asked for {asked}) and approved {call}. "
            f"It ran; the result:\n{row.outcome}"
        )
    if row.status == ApprovalStatus.APPROVED:
        return f"[Approval] I approved {call}. It ran; the result:\n{row.outcome}"
    if row.status == ApprovalStatus.REJECTED:
        why = f" My reason: {row.reason}" if row.reason else ""
        return f"[Approval] I rejected {call}; nothing was run.{why}"
    return f"[Approval] {call} was not decided in time ({row.status}); nothing was run."

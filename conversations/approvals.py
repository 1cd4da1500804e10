"""A person's decision on a pending tool call, from the chat page or REST.

``decide`` is what the websocket consumer and the REST view call: it decides
the row (registry.approvals), runs an approved call through the one dispatch
path, and reports the outcome into the conversation as a turn of its own: a
message the model reads on its next turn, a ``decision`` event, and a chunk
to every open tab.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db.models import Max

from conversations.display import group_name
from conversations.effects import effect_to_dict
from conversations.inserts import insert_rows
from conversations.models import ChatMessage, Conversation, TurnRecord
from conversations.runtime import start_run
from registry import approvals
from registry.models import ApprovalStatus, PendingApproval
from registry.registry import get_registry

DECISIONS = ("approve", "reject")


def decide(
    approval_id: str,
    decision: str,
    *,
    acting_user: Any,
    expected_hash: str | None,
    reason: str = "",
    conversation_id: str | None = None,
) -> dict:
    """Approve or reject one pending call; returns its card as it stands after.

    An approval this click made runs the call, as the person who approved it,
    through ``execute_tool``; a repeated click runs nothing again. A click from
    a conversation's page passes ``conversation_id``: only its calls. Blocks for
    as long as the call runs. Raises ValueError for an unknown decision, and
    ApprovalNotFound, PermissionDenied or ApprovalConflict as the services do.
    """
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}; expected 'approve' or 'reject'")
    if decision == "approve":
        if not expected_hash:
            raise approvals.ApprovalConflict("an approval needs the args_hash of the call you were shown")
        row, fresh = approvals.approve(
            approval_id, acting_user=acting_user, expected_hash=expected_hash, conversation_id=conversation_id
        )
    else:
        row, fresh = approvals.reject(
            approval_id,
            acting_user=acting_user,
            expected_hash=expected_hash,
            reason=reason,
            conversation_id=conversation_id,
        )
    if fresh:
        outcome = ""
        if row.status == ApprovalStatus.APPROVED:
            result = get_registry().execute_tool(row.tool_name, row.arguments, approvals.context_for(row))
            outcome = result.content
        row = approvals.record_outcome(row, outcome)
        report(row, acting_user)
    return {**approvals.card(row), "outcome": row.outcome}


def report(row: PendingApproval, acting_user: Any) -> None:
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
    runtime.recorder.record(
        "decision",
        {
            "approval": str(row.pk),
            "tool": row.tool_name,
            "status": row.status,
            "args_hash": row.args_hash,
            "decided_by": acting_user.get_username(),
            "outcome": row.outcome[:2000],
        },
    )
    runtime.flush_events()
    insert_rows(
        [
            TurnRecord(
                conversation=conversation, turn=turn, effects=[effect_to_dict(effect) for effect in runtime.log.close()]
            )
        ]
    )
    chunk = {"type": "approval_decided", "card": {**approvals.card(row), "outcome": row.outcome}, "text": text}
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group_name(conversation.pk), {"type": "conversation.chunk", "chunk": chunk})


def pending_cards(conversation: Conversation) -> list[dict]:
    """The cards of the calls in ``conversation`` still waiting for a click (a reload shows them again)."""
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
    if row.status == ApprovalStatus.APPROVED:
        return f"[Approval] I approved {call}. It ran; the result:\n{row.outcome}"
    if row.status == ApprovalStatus.REJECTED:
        why = f" My reason: {row.reason}" if row.reason else ""
        return f"[Approval] I rejected {call}; nothing was run.{why}"
    return f"[Approval] {call} was not decided in time ({row.status}); nothing was run."

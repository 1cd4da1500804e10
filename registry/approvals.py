"""A person's approval of one tool call: asked for by the tool, decided by a click.

A tool that must not act on the model's word alone (installing an MCP server
starts a program) asks instead of acting: ``request_approval`` stores a
PendingApproval row with the call's exact arguments, what the person is
shown, and a hash of both. The person's click (the chat page, or REST) calls
``approve`` or ``reject``; only the conversation's owner, or a user of the
same tenant holding ``registry.decide_pendingapproval``, may decide. The host
then runs the approved call through the one dispatch path with
``context_for(row)``; the tool's ``claim`` takes the row for that one run,
and only when the arguments it is called with are the approved ones and the
row still matches its hash. The model controls only a call's arguments,
never the context or the table, so nothing it sends can approve anything.

Rows are the state: a pending approval outlives the process that asked for
it and can be decided from any process after a restart.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from registry.cards import CardType
from registry.context import ToolContext
from registry.models import ApprovalSource, ApprovalStatus, PendingApproval
from registry.tenancy import tenant_of

DECIDE_ANY = "registry.decide_pendingapproval"
MAX_REASON_CHARS = 1000


class ApprovalNotFound(LookupError):
    """No such approval in the caller's tenant (another tenant's is never revealed)."""


class ApprovalConflict(Exception):
    """The approval is not in a state the action applies to: decided otherwise,
    expired, already used, or no longer what was shown."""


def arguments_hash(tool_name: str, arguments: dict, shown: dict) -> str:
    """SHA-256 of the tool name, the exact arguments and what the person is shown.

    Canonical JSON (sorted keys, no spaces), so equal calls hash equally in
    any process. Raises TypeError for arguments JSON cannot express.
    """
    canonical = json.dumps(
        {"tool": tool_name, "arguments": arguments, "shown": shown},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


@transaction.atomic
def request_approval(
    *,
    acting_user: Any,
    tenant_id: str,
    conversation_id: str,
    tool_name: str,
    arguments: dict,
    shown: dict,
    source: str = ApprovalSource.TOOL,
    tool_use_id: str = "",
    ttl_seconds: int | None = None,
) -> PendingApproval:
    """The pending approval of this exact call, made now or (the same call asked
    again) the one already waiting. ``acting_user`` is whose call it is; ``source``
    who asked (the tool itself, or an approval rule in the registry's gate);
    ``ttl_seconds`` how long it stays decidable (default EUNICE_APPROVAL_TTL_SECONDS).

    Raises TypeError for arguments JSON cannot express.
    """
    digest = arguments_hash(tool_name, arguments, shown)
    waiting = (
        PendingApproval.objects.select_for_update()
        .undecided()
        .filter(tenant_id=tenant_id, conversation_id=conversation_id, user_id=acting_user.pk, args_hash=digest)
        .first()
    )
    if waiting is not None:
        return waiting
    return PendingApproval.objects.create(
        tenant_id=tenant_id,
        user_id=acting_user.pk,
        conversation_id=conversation_id or "",
        tool_name=tool_name,
        arguments=arguments,
        shown=shown,
        args_hash=digest,
        source=source,
        tool_use_id=tool_use_id[:64],
        expires_at=timezone.now() + timedelta(seconds=ttl_seconds or settings.EUNICE_APPROVAL_TTL_SECONDS),
    )


def approve(
    approval_id: str | uuid.UUID, *, acting_user: Any, expected_hash: str, conversation_id: str | None = None
) -> tuple[PendingApproval, bool]:
    """Approve the call the person was shown; returns the row and whether this
    click approved it (False: it was approved before, so nothing runs twice).

    ``expected_hash`` is the hash the page showed: a row changed since fails.
    ``conversation_id``, when given, is where the click came from: a row of
    another conversation is not found. Raises ApprovalNotFound,
    PermissionDenied, or ApprovalConflict (rejected,
    expired, or its arguments no longer match their hash).
    """
    _expire_if_overdue(approval_id)
    return _decide(approval_id, ApprovalStatus.APPROVED, acting_user, expected_hash, "", conversation_id)


@transaction.atomic
def approve_edited(
    approval_id: str | uuid.UUID,
    *,
    acting_user: Any,
    expected_hash: str,
    arguments: dict,
    shown: dict,
    conversation_id: str | None = None,
) -> tuple[PendingApproval, bool]:
    """Approve the call with the arguments the person edited it to; returns the row and
    whether this click approved it.

    ``expected_hash`` is the hash of the call they were shown and edited. The row's
    arguments become the edited ones, ``shown`` what the page shows of them, and its
    hash is made again over both: what runs is exactly what the person wrote and saw.
    The model's arguments are kept in ``original_arguments``. Raises as ``approve``.
    """
    _expire_if_overdue(approval_id)
    row = _decidable(approval_id, acting_user, conversation_id)
    if row.status == ApprovalStatus.APPROVED and row.arguments == arguments:
        return row, False
    if row.source != ApprovalSource.RULE:
        raise ApprovalConflict("this call shows what it will run and cannot be edited; approve or reject it")
    if row.status != ApprovalStatus.PENDING:
        raise ApprovalConflict(f"this call was already {row.status}; it cannot be edited now")
    if expected_hash != row.args_hash:
        raise ApprovalConflict("this is not the call you were shown; reload the page and look again")
    if arguments_hash(row.tool_name, row.arguments, row.shown) != row.args_hash:
        raise ApprovalConflict("this call's arguments changed after it was shown; it cannot be approved")
    row.original_arguments = row.arguments
    row.arguments, row.shown = arguments, shown
    row.args_hash = arguments_hash(row.tool_name, arguments, shown)
    row.status, row.decided_by, row.decided_at = ApprovalStatus.APPROVED, acting_user, timezone.now()
    row.reason = "edited by the person"
    row.save(
        update_fields=[
            "original_arguments",
            "arguments",
            "shown",
            "args_hash",
            "status",
            "decided_by",
            "decided_at",
            "reason",
        ]
    )
    return row, True


def reject(
    approval_id: str | uuid.UUID,
    *,
    acting_user: Any,
    expected_hash: str | None = None,
    reason: str = "",
    conversation_id: str | None = None,
) -> tuple[PendingApproval, bool]:
    """Reject the call; returns the row and whether this click rejected it.

    Raises ApprovalNotFound, PermissionDenied, or ApprovalConflict as ``approve`` does.
    """
    _expire_if_overdue(approval_id)
    return _decide(approval_id, ApprovalStatus.REJECTED, acting_user, expected_hash, reason, conversation_id)


@transaction.atomic
def _decide(
    approval_id: str | uuid.UUID,
    decision: str,
    acting_user: Any,
    expected_hash: str | None,
    reason: str,
    conversation_id: str | None,
) -> tuple[PendingApproval, bool]:
    row = _decidable(approval_id, acting_user, conversation_id)
    if row.status == decision:
        return row, False
    if row.status != ApprovalStatus.PENDING:
        raise ApprovalConflict(f"this call was already {row.status}; it cannot be {decision} now")
    if expected_hash is not None and expected_hash != row.args_hash:
        raise ApprovalConflict("this is not the call you were shown; reload the page and look again")
    if arguments_hash(row.tool_name, row.arguments, row.shown) != row.args_hash:
        raise ApprovalConflict("this call's arguments changed after it was shown; it cannot be approved")
    row.status, row.decided_by, row.decided_at = decision, acting_user, timezone.now()
    row.reason = reason[:MAX_REASON_CHARS]
    row.save(update_fields=["status", "decided_by", "decided_at", "reason"])
    return row, True


def _decidable(approval_id: str | uuid.UUID, acting_user: Any, conversation_id: str | None) -> PendingApproval:
    """The row locked for a decision by ``acting_user``. Raises ApprovalNotFound
    (no such row in their tenant) or PermissionDenied (not theirs to decide)."""
    if acting_user is None or not getattr(acting_user, "is_active", False):
        raise PermissionDenied("only a signed-in, active user may decide an approval")
    tenant = tenant_of(acting_user)
    rows = PendingApproval.objects.select_for_update().filter(pk=_uuid(approval_id), tenant_id=tenant)
    if conversation_id is not None:
        rows = rows.filter(conversation_id=conversation_id)
    row = rows.first()
    if tenant is None or row is None:
        raise ApprovalNotFound(f"no approval {str(approval_id)[:40]!r}")
    if row.user_id != acting_user.pk and not acting_user.has_perm(DECIDE_ANY):
        raise PermissionDenied("only the person whose conversation asked may decide this call")
    return row


@transaction.atomic
def _expire_if_overdue(approval_id: str | uuid.UUID) -> None:
    PendingApproval.objects.filter(
        pk=_uuid(approval_id), status=ApprovalStatus.PENDING, expires_at__lte=timezone.now()
    ).update(status=ApprovalStatus.EXPIRED, decided_at=timezone.now())


def find(approval_id: str | uuid.UUID, tenant_id: str | None = None) -> Any:
    """The row with this id (none for an id that is no UUID), only of ``tenant_id`` when given."""
    key = _uuid(approval_id)
    rows = PendingApproval.objects.filter(pk=key) if key is not None else PendingApproval.objects.none()
    return rows.filter(tenant_id=tenant_id) if tenant_id is not None else rows


def _uuid(approval_id: str | uuid.UUID) -> uuid.UUID | None:
    try:
        return approval_id if isinstance(approval_id, uuid.UUID) else uuid.UUID(str(approval_id))
    except ValueError:
        return None


def context_for(row: PendingApproval) -> ToolContext:
    """The context the host runs an approved call with: as the person who approved it."""
    return ToolContext(
        tenant_id=row.tenant_id,
        user_id=str(row.decided_by_id or ""),
        conversation_id=row.conversation_id,
        approval_id=str(row.pk),
    )


def claim(context: ToolContext, tool_name: str, arguments: dict) -> PendingApproval | None:
    """For the tool: the approved row its context carries, taken for this one run.

    None when the context carries no approval (the tool should then ask for
    one). Raises ApprovalConflict when it carries one that is not approved,
    was used already, is another tool's or tenant's, was approved for other
    arguments, or no longer matches its hash.
    """
    approval_id = context.approval_id
    if not approval_id:
        return None
    row = PendingApproval.objects.filter(
        pk=_uuid(approval_id), tenant_id=context.tenant_id, tool_name=tool_name
    ).first()
    if row is None or row.status != ApprovalStatus.APPROVED:
        raise ApprovalConflict("this call has no approval from the person")
    if _canonical(row.arguments) != _canonical(arguments):
        raise ApprovalConflict("these are not the arguments the person approved")
    if arguments_hash(row.tool_name, row.arguments, row.shown) != row.args_hash:
        raise ApprovalConflict("the approved call changed after it was shown")
    # A conditional update: of two runs racing for one approval, exactly one wins.
    taken = PendingApproval.objects.filter(pk=row.pk, executed_at__isnull=True).update(executed_at=timezone.now())
    if taken != 1:
        raise ApprovalConflict("this approval was used already; an approval runs once")
    return row


@transaction.atomic
def record_outcome(row: PendingApproval, outcome: str) -> PendingApproval:
    """Keep what the approved call returned (what the model is told, bounded)."""
    row.outcome = outcome[:4000]
    row.save(update_fields=["outcome"])
    return row


def card(row: PendingApproval) -> dict:
    """What the chat page draws: the call, what it runs, and the hash a click sends back."""
    return {
        "type": CardType.APPROVAL,
        "approval_id": str(row.pk),
        "args_hash": row.args_hash,
        "tool": row.tool_name,
        "status": row.status,
        "shown": row.shown,
        "editable": row.source == ApprovalSource.RULE,
        "expires_at": row.expires_at.isoformat(),
    }


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)

"""The approval page: a person sees one pending tool call and approves, edits or rejects it.

The MCP endpoint sends a person here (an ``elicitation/create`` in URL mode, or the
link in its error when the client cannot elicit) for a call an approval rule made wait.
The decision is the one the chat page and ``/api/approvals/`` make
(``conversations.approvals.decide``): an approval runs the call as the person and keeps
its outcome, which this page then shows. Only a signed-in person of the row's tenant
sees it, and only their own call unless they hold ``registry.decide_pendingapproval``;
any other id is a 404, the same as none.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from conversations import approvals
from conversations.approvals_api import resume_turn
from eunice.jsonlimits import loads_bounded
from registry.approvals import DECIDE_ANY, ApprovalConflict, ApprovalNotFound, find
from registry.models import ApprovalSource, ApprovalStatus, PendingApproval
from registry.tenancy import tenant_of

MAX_REASON_CHARS = 1000
MAX_ARGUMENTS_CHARS = 100_000  # edited arguments, as typed into the page


def page_path(approval_id: str) -> str:
    """The page's path for one approval."""
    return reverse("approval-page", args=[approval_id])


@login_required
@require_http_methods(["GET", "POST"])
def approval_page(request: HttpRequest, approval_id: str) -> HttpResponse:
    """GET: the call, its rule and note, its state, and its outcome once decided.
    POST (``decision`` approve, edit or reject): decide it, then show it again."""
    row = _visible(request.user, approval_id)
    error = ""
    if request.method == "POST":
        error = _decide(request, row)
        if not error:
            return redirect(page_path(str(row.pk)))
        row = _visible(request.user, approval_id)
    status = 400 if error else 200
    return render(request, "mcpserver/approval.html", _context(row, error), status=status)


def _visible(user: Any, approval_id: str) -> PendingApproval:
    """The row ``user`` may see, closed first if its time is up. Raises Http404 otherwise."""
    tenant = tenant_of(user)
    rows = find(approval_id, tenant) if tenant else PendingApproval.objects.none()
    if not user.has_perm(DECIDE_ANY):
        rows = rows.filter(user=user)
    approvals.expire_overdue_among(rows)
    row = rows.select_related("decided_by").first()
    if row is None:
        raise Http404("No such approval.")
    return row


def _decide(request: HttpRequest, row: PendingApproval) -> str:
    """Decide ``row`` as the request's user; returns the sentence saying why not, or ""."""
    decision = request.POST.get("decision", "")
    arguments = None
    if decision == "edit":
        try:
            arguments = loads_bounded(
                request.POST.get("arguments", ""), max_bytes=MAX_ARGUMENTS_CHARS, what="arguments"
            )
        except json.JSONDecodeError as exc:
            return f"arguments: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        except ValueError as exc:  # too long or too deep: the message names the limit
            return str(exc)
    try:
        card = approvals.decide(
            str(row.pk),
            decision,
            acting_user=request.user,
            expected_hash=request.POST.get("args_hash") or None,
            reason=request.POST.get("reason", "")[:MAX_REASON_CHARS],
            arguments=arguments,
        )
    except ApprovalNotFound:
        raise Http404("No such approval.") from None
    except (PermissionDenied, ApprovalConflict) as exc:
        return str(exc)
    except ValueError as exc:
        return f"{'arguments' if decision == 'edit' else 'decision'}: {exc}"
    resume_turn(str(row.pk), card.get("resume"))
    return ""


def _context(row: PendingApproval, error: str) -> dict[str, Any]:
    shown = row.shown or {}
    return {
        "row": row,
        "error": error,
        "pending": row.status == ApprovalStatus.PENDING,
        "editable": row.source == ApprovalSource.RULE,
        "arguments": json.dumps(row.arguments, indent=2, sort_keys=True, ensure_ascii=False),
        "original": (
            json.dumps(row.original_arguments, indent=2, sort_keys=True, ensure_ascii=False)
            if row.original_arguments is not None
            else ""
        ),
        "rule": shown.get("rule", ""),
        "note": shown.get("note", ""),
    }

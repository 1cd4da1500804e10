"""A served call that waits for a person's approval: ask them through MCP elicitation (URL mode).

An approval rule (registry/approval_rules.py) stops the call and stores a pending
approval; the endpoint learns its card through ``ToolContext.awaiting``. Then:

- a client that declared ``elicitation: {url: {}}`` on a connection that can carry a
  server-to-client request (a 2025-11-25 session) is sent ``elicitation/create`` in URL
  mode, pointing at the approval's page (mcpserver/approval_page.py). When the client
  answers ``accept`` (the person went there), the endpoint waits up to
  ``wait_seconds`` for their decision and answers the call with the outcome the page
  stored, or an error saying it was rejected, expired or still waits;
- any other client is answered with an error naming the page's URL.

The approved call runs once, in the page's request, as the person who approved it; the
tool call here only reads the stored outcome, so a client retrying cannot run it twice.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.urls import reverse
from django.utils import timezone
from mcp.shared.exceptions import MCPError, NoBackChannelError

from conversations.approvals import expire_overdue_among
from mcpserver.oauth import origin
from registry import aio
from registry.models import ApprovalStatus, PendingApproval

POLL_SECONDS = 0.25  # how often a decision is looked for while the person is on the page


@dataclass(frozen=True, slots=True)
class Decision:
    """What became of a pending call, as the tool call answers it."""

    status: str
    outcome: str = ""
    reason: str = ""
    decided_by: str = ""
    edited: Any = None  # the arguments the person ran instead of the caller's, or None

    @property
    def done(self) -> bool:
        # An approved call has run when its outcome is stored (the page stores it after the run).
        return self.status != ApprovalStatus.PENDING and (self.status != ApprovalStatus.APPROVED or bool(self.outcome))


def page_url(scope: dict, approval_id: str) -> str:
    """The absolute URL of the approval's page, on the host the client reached."""
    return origin(scope) + reverse("approval-page", args=[approval_id])


def waiting_text(name: str, card: dict, url: str) -> str:
    """The error a client that cannot elicit reads: what waits, and where the person decides."""
    rule = (card.get("shown") or {}).get("rule", "")
    return (
        f"{name} has not run: it waits for the person's approval (rule {rule!r}). Open {url} to see the call with "
        f"its arguments and approve, edit or reject it; an approved call runs there and the page shows its "
        f"outcome. Do not call it again; tell the user it is waiting for them. Approval id {card['approval_id']}."
    )


async def ask(ctx: Any, name: str, card: dict, tenant_id: str, wait_seconds: float) -> types.CallToolResult:
    """Answer a call that waits for approval ``card``: through URL elicitation where the
    client supports it, otherwise with ``waiting_text``."""
    url = page_url(ctx.request.scope, card["approval_id"])
    if not _elicits_urls(ctx):
        return _error(waiting_text(name, card, url))
    message = f"{name} needs your approval before it runs. Open the page to see the call and decide."
    try:
        answer = await ctx.session.elicit_url(message, url, card["approval_id"], related_request_id=ctx.request_id)
    except NoBackChannelError:
        return _error(waiting_text(name, card, url))
    except MCPError as exc:  # the client refused the request itself: it cannot show the page
        return _error(f"{waiting_text(name, card, url)} (The client could not open it: {exc.error.message})")
    if answer.action != "accept":
        return _error(
            f"{name} has not run: the person did not open the approval page ({answer.action}). "
            f"It still waits at {url} until it expires."
        )
    decision = await _decision_within(card["approval_id"], tenant_id, wait_seconds)
    if decision.done:
        await ctx.session.send_elicit_complete(card["approval_id"], related_request_id=ctx.request_id)
    return _answer(name, decision, url)


def _elicits_urls(ctx: Any) -> bool:
    declared = ctx.session.client_capabilities
    elicitation = getattr(declared, "elicitation", None)
    return getattr(elicitation, "url", None) is not None and ctx.session.can_send_request


async def _decision_within(approval_id: str, tenant_id: str, wait_seconds: float) -> Decision:
    """The call's decision, looked for until it is made or ``wait_seconds`` pass."""
    deadline = time.monotonic() + wait_seconds
    look = aio.in_db_thread(decision_of)
    while True:
        decision = await look(approval_id, tenant_id)
        if decision.done or time.monotonic() >= deadline:
            return decision
        await asyncio.sleep(POLL_SECONDS)


def decision_of(approval_id: str, tenant_id: str) -> Decision:
    """The state of one approval of ``tenant_id`` (expired once its time is up). Queries."""
    rows = PendingApproval.objects.filter(pk=approval_id, tenant_id=tenant_id)
    row = rows.select_related("decided_by").first()
    if row is None:
        return Decision(ApprovalStatus.EXPIRED)
    if row.status == ApprovalStatus.PENDING and row.expires_at <= timezone.now():
        expire_overdue_among(rows)
        row.status = ApprovalStatus.EXPIRED
    who = row.decided_by.get_username() if row.decided_by is not None else ""
    edited = row.arguments if row.original_arguments is not None else None
    return Decision(row.status, row.outcome, row.reason, who, edited)


def _answer(name: str, decision: Decision, url: str) -> types.CallToolResult:
    if decision.status == ApprovalStatus.APPROVED and decision.done:
        blocks: list[types.ContentBlock] = [types.TextContent(text=decision.outcome)]
        if decision.edited is not None:
            edited = f"{decision.decided_by} edited the call; it ran with {decision.edited}"
            blocks.append(types.TextContent(text=edited))
        return types.CallToolResult(content=blocks, is_error=False)
    if decision.status == ApprovalStatus.APPROVED:
        return _error(f"{name} was approved and is still running; its outcome will show at {url}")
    if decision.status == ApprovalStatus.REJECTED:
        why = f": {decision.reason}" if decision.reason else ""
        return _error(f"{name} did not run: {decision.decided_by or 'the person'} rejected it{why}")
    if decision.status == ApprovalStatus.EXPIRED:
        return _error(f"{name} did not run: nobody decided in time and the approval expired")
    return _error(f"{name} has not run: it still waits for the person's decision at {url}")


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

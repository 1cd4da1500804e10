"""A served call that waits for a person's approval: ask them through MCP elicitation (URL mode).

An approval rule (registry/approval_rules.py) stops the call and stores a pending
approval; the endpoint learns its card through ``ToolContext.awaiting``. Then:

- a client that declared ``elicitation: {url: {}}`` is asked to send the person to the
  approval's page (mcpserver/approval_page.py) with an ``elicitation/create`` in URL
  mode: on a 2025-11-25 session as a server-to-client request; at 2026-07-28
  (stateless) inside an ``input_required`` result, which the client answers by calling
  the tool again with its ``inputResponses`` and the signed ``requestState`` (the
  approval's id; that retry runs nothing, it only reads the decision). When the
  client answers ``accept`` (the person went there), the endpoint waits up to
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
from django.core import signing
from django.urls import reverse
from django.utils import timezone
from mcp.shared.exceptions import MCPError, NoBackChannelError

from conversations.approvals import expire_overdue_among
from mcpserver.oauth import origin
from registry import aio
from registry.models import ApprovalStatus, PendingApproval

POLL_SECONDS = 0.25  # how often a decision is looked for while the person is on the page
ANSWER_SECONDS = 60.0  # how long a 2025-11-25 client may take to answer the elicitation, beyond wait_seconds
INPUT_KEY = "approval"  # the elicitation's key in a 2026-07-28 input_required result
STATE_SALT = "eunice.mcpserver.approval"  # requestState: the approval's id, signed


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


async def ask(
    ctx: Any, name: str, card: dict, tenant_id: str, wait_seconds: float
) -> types.CallToolResult | types.InputRequiredResult:
    """Answer a call that waits for approval ``card``: through URL elicitation where the
    client supports it, otherwise with ``waiting_text``."""
    approval_id = card["approval_id"]
    url = page_url(ctx.request.scope, approval_id)
    if not _elicits_urls(ctx):
        return _error(waiting_text(name, card, url))
    if not ctx.session.can_send_request:  # 2026-07-28: the client asks the person, then calls again
        elicit = types.ElicitRequest(params=types.ElicitRequestURLParams(message=_asking(name), url=url))
        return types.InputRequiredResult(
            input_requests={INPUT_KEY: elicit}, request_state=signing.dumps(approval_id, salt=STATE_SALT)
        )
    try:
        async with asyncio.timeout(wait_seconds + ANSWER_SECONDS):  # a client that never answers
            answer = await ctx.session.elicit_url(_asking(name), url, approval_id, related_request_id=ctx.request_id)
    except (NoBackChannelError, TimeoutError):
        return _error(waiting_text(name, card, url))
    except MCPError as exc:  # the client refused the request itself: it cannot show the page
        return _error(f"{waiting_text(name, card, url)} (The client could not open it: {exc.error.message})")
    decision = await _after(answer, name, approval_id, tenant_id, wait_seconds)
    if isinstance(decision, types.CallToolResult):
        return decision
    if decision.done:
        await ctx.session.send_elicit_complete(approval_id, related_request_id=ctx.request_id)
    return _answer(name, decision, url)


async def answered(
    ctx: Any, name: str, params: types.CallToolRequestParams, caller: Any, wait_seconds: float
) -> types.CallToolResult:
    """The 2026-07-28 retry of a call ``ask`` answered ``input_required``: the person's
    decision on the approval its ``requestState`` names (signed by this server, and of
    this caller's tenant, user and tool), after the client's answer to the elicitation."""
    try:
        approval_id = signing.loads(params.request_state or "", salt=STATE_SALT)
    except signing.BadSignature:
        return _error("requestState is not one this server issued: call the tool again without it")
    mine = await aio.in_db_thread(_is_callers)(approval_id, name, caller.tenant_id, caller.user_id)
    if not mine:
        return _error("requestState names no approval of yours for this tool: call the tool again without it")
    answer = (params.input_responses or {}).get(INPUT_KEY)
    if not isinstance(answer, types.ElicitResult):
        return _error(f"the retry carries no answer to the elicitation {INPUT_KEY!r}: answer it, then retry")
    decision = await _after(answer, name, approval_id, caller.tenant_id, wait_seconds)
    url = page_url(ctx.request.scope, approval_id)
    return decision if isinstance(decision, types.CallToolResult) else _answer(name, decision, url)


def _asking(name: str) -> str:
    return f"{name} needs your approval before it runs. Open the page to see the call and decide."


async def _after(
    answer: types.ElicitResult, name: str, approval_id: str, tenant_id: str, wait_seconds: float
) -> Decision | types.CallToolResult:
    """The decision once the client ``accept``ed (the person went to the page), or the
    error a declined or cancelled elicitation answers."""
    if answer.action != "accept":
        return _error(
            f"{name} has not run: the person did not open the approval page ({answer.action}). "
            "It still waits there until it expires."
        )
    return await _decision_within(approval_id, tenant_id, wait_seconds)


def _is_callers(approval_id: str, name: str, tenant_id: str, user_id: str) -> bool:
    rows = PendingApproval.objects.filter(pk=approval_id, tenant_id=tenant_id, user_id=user_id, tool_name=name)
    return rows.exists()


def _elicits_urls(ctx: Any) -> bool:
    declared = ctx.session.client_capabilities
    elicitation = getattr(declared, "elicitation", None)
    return getattr(elicitation, "url", None) is not None


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

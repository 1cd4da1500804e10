"""A person's approval of chosen tool calls (issue 34): staff's rules, the gate, the decision.

The browser side (approve, edit, reject on the chat page) and a restart with an
approval pending are in tests/web/test_call_approvals.py and
tests/web/test_call_approval_restart.py.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from conversations import approvals as decisions
from conversations.loop import run_turn
from conversations.models import ChatMessage, Conversation, ConversationEvent
from registry import approvals, gate
from registry.context import ToolContext
from registry.models import (
    ApprovalRule,
    ApprovalRuleKind,
    ApprovalSource,
    ApprovalStatus,
    PendingApproval,
    TenantMembership,
    ToolExecutionLog,
)
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db(transaction=True)

TOOL = "search_tools"
ASKED = {"query": "make a plan"}
RUNS = {**ASKED, "limit": 5}  # what is shown and runs: the call with its schema's defaults


def person(username: str, tenant: str = TENANT):
    user = get_user_model().objects.create_user(username, password="pw")
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    return user


@pytest.fixture
def ann():
    return person("ann")


@pytest.fixture
def conversation(ann):
    return Conversation.objects.create(tenant_id=TENANT, user=ann, title="Approvals")


@pytest.fixture
def rule():
    return ApprovalRule.objects.create(name="search needs a person", tenant_id=TENANT, tool_name=TOOL)


def context(conversation, **fields) -> ToolContext:
    return ToolContext(tenant_id=TENANT, user_id=str(conversation.user.pk), conversation_id=conversation.pk, **fields)


def ask(registry, conversation, arguments=ASKED):
    result = registry.execute_tool(TOOL, dict(arguments), context(conversation))
    row = PendingApproval.objects.filter(tool_name=TOOL).order_by("-created_at").first()
    assert row is not None, result.content
    return result, row


def test_a_call_no_rule_covers_skips_the_gate_and_runs(registry, conversation):
    ApprovalRule.objects.create(name="theirs", tenant_id=OTHER_TENANT, kind=ApprovalRuleKind.ALL)
    assert not gate.concerns(TOOL, ToolContext(tenant_id=TENANT))
    assert gate.concerns(TOOL, ToolContext(tenant_id=OTHER_TENANT))
    result = registry.execute_tool(TOOL, ASKED, context(conversation))
    assert result.error is None and not PendingApproval.objects.exists()


def test_a_covered_call_waits_for_the_person_and_their_approval_runs_it(registry, conversation, rule):
    result, row = ask(registry, conversation)
    assert result.error is not None and "waits for the person's approval" in result.content
    assert (row.status, row.source, row.arguments, row.user) == ("pending", "rule", RUNS, conversation.user)
    assert ToolExecutionLog.objects.get().outcome_kind == "ApprovalPending"  # the request is in the log

    card = decisions.decide(
        str(row.pk),
        "approve",
        acting_user=conversation.user,
        expected_hash=row.args_hash,
        conversation_id=conversation.pk,
    )
    row.refresh_from_db()
    assert row.status == ApprovalStatus.APPROVED and row.executed_at is not None
    assert "plan" in row.outcome  # search_tools ran and found the plan tool
    assert card["resume"]["text"].startswith(f"[Approval] I approved {TOOL}")
    logged = list(ToolExecutionLog.objects.order_by("id").values_list("outcome_kind", "user_id"))
    assert logged[-1] == ("", str(conversation.user.pk))  # it ran, as the person who approved it


def test_a_resumed_call_cannot_run_arguments_other_than_those_approved(registry, conversation, rule):
    _, row = ask(registry, conversation)
    row, _ = approvals.approve(row.pk, acting_user=conversation.user, expected_hash=row.args_hash)
    run_as_approved = approvals.context_for(row)

    other = registry.execute_tool(TOOL, {"query": "delete everything"}, run_as_approved)
    assert "these are not the arguments the person approved" in other.content

    PendingApproval.objects.filter(pk=row.pk).update(arguments={"query": "delete everything"})
    tampered = registry.execute_tool(TOOL, {"query": "delete everything"}, run_as_approved)
    assert "the approved call changed after it was shown" in tampered.content

    PendingApproval.objects.filter(pk=row.pk).update(arguments=RUNS)
    assert registry.execute_tool(TOOL, RUNS, run_as_approved).error is None
    again = registry.execute_tool(TOOL, RUNS, run_as_approved)
    assert "an approval runs once" in again.content
    # Another tool cannot ride on this approval either.
    assert "no approval" in registry.execute_tool("plan", {"steps": []}, run_as_approved).content


def test_an_edit_runs_exactly_the_edited_arguments_and_is_bound_to_them(registry, conversation, rule):
    _, row = ask(registry, conversation)
    with pytest.raises(ValueError, match="not valid for search_tools"):
        decisions.decide(
            str(row.pk), "edit", acting_user=conversation.user, expected_hash=row.args_hash, arguments={"q": 1}
        )
    edited = {"query": "draw a chart"}
    card = decisions.decide(
        str(row.pk), "edit", acting_user=conversation.user, expected_hash=row.args_hash, arguments=edited
    )
    row.refresh_from_db()
    assert (row.arguments, row.original_arguments, row.status) == ({**edited, "limit": 5}, RUNS, "approved")
    assert (
        row.args_hash == approvals.arguments_hash(TOOL, row.arguments, row.shown)
        and row.shown["arguments"] == row.arguments
    )
    assert "chart" in row.outcome
    assert "I edited your call" in card["resume"]["text"] and '"draw a chart"' in card["resume"]["text"]
    # The model's own arguments never run on the edited approval.
    refused = registry.execute_tool(TOOL, RUNS, approvals.context_for(row))
    assert refused.error is not None


def test_a_rejection_runs_nothing_and_its_reason_is_what_the_model_reads(registry, conversation, rule):
    _, row = ask(registry, conversation)
    card = decisions.decide(
        str(row.pk), "reject", acting_user=conversation.user, expected_hash=None, reason="search the docs instead"
    )
    assert "nothing was run. My reason: search the docs instead" in card["resume"]["text"]
    assert ToolExecutionLog.objects.order_by("id").last().outcome_kind == "ApprovalRejected"
    assert PendingApproval.objects.get().executed_at is None


def test_a_chat_turn_pauses_and_the_decision_resumes_it(registry, conversation, rule):
    user = conversation.user
    paused = async_to_sync(run_turn)(conversation, text=f"/{TOOL} {json.dumps(ASKED)}", user=user)
    assert paused.stop_reason == "awaiting_approval"
    row = PendingApproval.objects.get()
    assert row.tool_use_id.startswith("toolu_offline_")
    assert ConversationEvent.objects.filter(event_type="approval_requested", data__approval=str(row.pk)).exists()

    card = decisions.decide(str(row.pk), "approve", acting_user=user, expected_hash=row.args_hash)
    resumed = async_to_sync(run_turn)(
        conversation, text=card["resume"]["text"], user=user, events=card["resume"]["events"]
    )
    assert resumed.stop_reason == "end_turn"
    decision = ConversationEvent.objects.get(event_type="decision", data__approval=str(row.pk))
    assert decision.turn == 2 and decision.data["status"] == "approved"
    assert ChatMessage.objects.filter(role="user", text__startswith=f"[Approval] I approved {TOOL}").count() == 1


def test_an_approval_nobody_decides_expires_with_a_clear_result_for_the_model(registry, conversation, rule):
    ApprovalRule.objects.filter(pk=rule.pk).update(timeout_seconds=60)
    _, row = ask(registry, conversation)
    assert 55 <= (row.expires_at - timezone.now()).total_seconds() <= 60
    PendingApproval.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert decisions.expire_overdue(conversation) == 1
    assert PendingApproval.objects.get().status == ApprovalStatus.EXPIRED
    told = ChatMessage.objects.get(role="user")
    assert (
        told.text.startswith(f"[Approval] {TOOL}") and "was not decided in time (expired); nothing was run" in told.text
    )
    assert ToolExecutionLog.objects.order_by("id").last().outcome_kind == "ApprovalExpired"
    assert decisions.expire_overdue(conversation) == 0


def test_rest_never_lists_as_pending_a_call_whose_time_is_up(registry, conversation, rule):
    _, row = ask(registry, conversation)
    owner = Client()
    owner.force_login(conversation.user)
    assert [r["id"] for r in owner.get("/api/approvals/?status=pending").json()["results"]] == [str(row.pk)]
    PendingApproval.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert owner.get("/api/approvals/?status=pending").json()["results"] == []
    listed = owner.get(f"/api/approvals/{row.pk}/").json()
    assert listed["status"] == "expired"
    assert "was not decided in time" in ChatMessage.objects.get(role="user").text  # the model reads it, once
    assert owner.get("/api/approvals/").json()["results"][0]["status"] == "expired"
    assert ChatMessage.objects.filter(role="user").count() == 1


def test_rest_edit_is_the_owners_and_stays_in_the_tenant(registry, conversation, rule):
    _, row = ask(registry, conversation)
    url = f"/api/approvals/{row.pk}/edit/"
    body = {"args_hash": row.args_hash, "arguments": {"query": "draw a chart"}}
    stranger, neighbour, owner = Client(), Client(), Client()
    stranger.force_login(person("eve", tenant=OTHER_TENANT))
    neighbour.force_login(person("bob"))
    owner.force_login(conversation.user)
    assert stranger.post(url, body, content_type="application/json").status_code == 404
    assert neighbour.post(url, body, content_type="application/json").status_code in (403, 404)
    bad = owner.post(url, {"args_hash": row.args_hash, "arguments": {"q": 1}}, content_type="application/json")
    assert bad.status_code == 400 and "not valid for search_tools" in bad.json()["arguments"][0]
    done = owner.post(url, body, content_type="application/json")
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "approved" and done.json()["resumed"] == "end_turn"
    assert done.json()["original_arguments"] == RUNS
    assert PendingApproval.objects.get().source == ApprovalSource.RULE


def test_rules_for_mcp_hints_and_writes(registry):
    from registry.approval_rules import _covered

    assert _covered(ApprovalRuleKind.MCP_DESTRUCTIVE, "mcp", {})  # MCP's default: may destroy
    assert not _covered(ApprovalRuleKind.MCP_DESTRUCTIVE, "mcp", {"readOnlyHint": True})
    assert not _covered(ApprovalRuleKind.MCP_DESTRUCTIVE, "mcp", {"destructiveHint": False})
    assert _covered(ApprovalRuleKind.WRITES, "mcp", {"destructiveHint": False})
    assert _covered(ApprovalRuleKind.WRITES, "custom", None)
    assert not _covered(ApprovalRuleKind.MCP_DESTRUCTIVE, "system", None)


def test_a_call_a_tool_asked_about_itself_cannot_be_edited(conversation):
    row = approvals.request_approval(
        acting_user=conversation.user,
        tenant_id=TENANT,
        conversation_id=conversation.pk,
        tool_name="install_mcp_server",
        arguments={"id": "time", "name": "time"},
        shown={"launch": "python -m mcp_server_time"},
    )
    with pytest.raises(approvals.ApprovalConflict, match="cannot be edited"):
        decisions.decide(
            str(row.pk),
            "edit",
            acting_user=conversation.user,
            expected_hash=row.args_hash,
            arguments={"id": "evil", "name": "evil"},
        )
    assert PendingApproval.objects.get().status == ApprovalStatus.PENDING

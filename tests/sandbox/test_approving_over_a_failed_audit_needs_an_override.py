"""A failed audit blocks approval unless staff override it with a reason, which is recorded and shown."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from registry.custom_tools import approve_custom_tool, register_custom_tool
from registry.models import ReviewAction, ToolDefinition, ToolStatus
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def failing(name="wrong_answer"):
    """A tool whose own test case fails in the auditor's sandbox run."""
    return register_custom_tool(
        name=name,
        code="result = inputs.get('n', 0) + 2",
        description="Adds one.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=TENANT,
        test_cases=[{"inputs": {"n": 1}, "expect": "2"}],
    )


def url(tool) -> str:
    return f"/admin/registry/tooldefinition/{tool.pk}/review/"


def test_a_failed_audit_blocks_a_plain_approval(staff, custom_tools_on):
    tool = failing()
    assert tool.test_results["passed"] is False
    with pytest.raises(ValidationError, match="audit is failed: approving it anyway needs an override"):
        approve_custom_tool(tool, acting_user=staff)
    assert ToolDefinition.objects.get(pk=tool.pk).status == ToolStatus.TESTING


def test_the_review_page_approves_over_a_failed_audit_only_with_a_reason(client, staff, custom_tools_on):
    tool = failing()
    client.force_login(staff)
    assert "Audit failed for this definition" in client.get(url(tool)).content.decode()
    client.post(url(tool), {"approve": "1", "definition_hash": tool.definition_hash})
    assert ToolDefinition.objects.get(pk=tool.pk).status == ToolStatus.TESTING

    client.post(
        url(tool),
        {
            "approve": "1",
            "definition_hash": tool.definition_hash,
            "override_reason": "the expectation is off by one; the code is right",
        },
    )
    tool.refresh_from_db()
    override = tool.reviews.get(action=ReviewAction.OVERRIDE)
    assert tool.status == ToolStatus.APPROVED and override.acting_user == staff
    assert override.reason == "audit failed; override: the expectation is off by one; the code is right"
    page = client.get(url(tool)).content.decode()
    assert "Approved over a failed audit by reviewer" in page and "the expectation is off by one" in page


def test_the_cli_approves_over_a_failed_audit_with_override(staff, custom_tools_on):
    failing()
    with pytest.raises(CommandError, match="needs an override"):
        call_command("review_tool", "wrong_answer", "--approve", "--as", "reviewer", stdout=io.StringIO())
    call_command(
        "review_tool",
        "wrong_answer",
        "--approve",
        "--override",
        "known and accepted",
        "--as",
        "reviewer",
        stdout=io.StringIO(),
    )
    tool = ToolDefinition.objects.get(name="wrong_answer")
    assert tool.status == ToolStatus.APPROVED
    assert tool.reviews.get(action=ReviewAction.OVERRIDE).reason.endswith("known and accepted")


def test_a_tool_changed_behind_the_auditors_back_needs_an_override(staff, custom_tools_on):
    tool = register_custom_tool(
        name="was_fine",
        code="result = 1",
        description="One.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=TENANT,
    )
    ToolDefinition.objects.filter(pk=tool.pk).update(implementation="result = 2")
    with pytest.raises(ValidationError, match="audit is stale"):
        approve_custom_tool(tool, acting_user=staff)

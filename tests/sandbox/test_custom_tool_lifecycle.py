"""draft → testing → approved | rejected; approval bound to the definition hash."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from registry.auditor import audit_custom_tool
from registry.custom_tools import (
    ReviewConflict,
    approve_custom_tool,
    edit_custom_tool,
    register_custom_tool,
    reject_custom_tool,
)
from registry.models import ReviewAction, ToolStatus
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def make(**overrides):
    fields = {
        "name": "fresh",
        "code": "result = inputs.get('n', 1) + 1",
        "description": "Adds one.",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "tenant_id": TENANT,
        "test_cases": [{"inputs": {"n": 1}, "expect": "2"}],
    }
    return register_custom_tool(**{**fields, **overrides})


def test_a_registered_tool_waits_in_testing(custom_tools_on):
    assert make().status == ToolStatus.TESTING


def test_an_unapproved_tool_is_not_offered_or_callable(custom_tools_on, registry, call):
    make()
    assert "fresh" not in [t["name"] for t in registry.get_tools_for_llm(TENANT)]
    assert "unknown tool" in call("fresh").content


def test_an_approved_tool_is_offered_on_the_next_request_without_restart(custom_tools_on, registry, staff, call):
    tool = make()
    registry.get_tools_for_llm(TENANT)
    approve_custom_tool(tool, acting_user=staff)
    assert "fresh" in [t["name"] for t in registry.get_tools_for_llm(TENANT)]
    assert call("fresh", n=41).content.endswith("42")


def test_an_edit_after_approval_returns_the_tool_to_testing(custom_tools_on, registry, staff):
    tool = approve_custom_tool(make(), acting_user=staff)
    tool = edit_custom_tool(tool, acting_user=staff, code="result = 0")
    assert tool.status == ToolStatus.TESTING
    assert "fresh" not in [t["name"] for t in registry.get_tools_for_llm(TENANT)]


def test_a_bulk_update_of_the_code_cannot_run_unreviewed_code(custom_tools_on, staff, call):
    tool = approve_custom_tool(make(), acting_user=staff)
    type(tool).objects.filter(pk=tool.pk).update(implementation="result = 'sneaky'")
    assert "awaits review" in call("fresh").content


def test_only_staff_approve(custom_tools_on, django_user_model):
    user = django_user_model.objects.create_user("plain")
    with pytest.raises(PermissionDenied):
        approve_custom_tool(make(), acting_user=user)


def test_a_rejection_needs_a_reason(custom_tools_on, staff):
    with pytest.raises(ValidationError):
        reject_custom_tool(make(), acting_user=staff, reason=" ")


def test_approve_and_reject_write_audit_rows_with_the_hash(custom_tools_on, staff):
    tool = approve_custom_tool(make(), acting_user=staff)
    review = tool.reviews.get(action=ReviewAction.APPROVE)
    assert (review.acting_user, review.definition_hash) == (staff, tool.definition_hash)
    other = reject_custom_tool(make(name="other"), acting_user=staff, reason="unsafe")
    assert other.reviews.get(action=ReviewAction.REJECT).reason == "unsafe"


def test_a_reviewer_cannot_approve_a_definition_they_did_not_see(custom_tools_on, staff):
    tool = make()
    with pytest.raises(ReviewConflict):
        approve_custom_tool(tool, acting_user=staff, expected_hash="0" * 64)


def test_the_auditor_runs_the_test_cases_in_the_sandbox_and_stores_them(custom_tools_on):
    report = audit_custom_tool(make())
    assert report["passed"] and report["results"][0]["layers"]["seccomp"]
    assert make(name="broken", code="import os").status == ToolStatus.TESTING
    assert audit_custom_tool(make(name="broken2", code="import os"))["static_problems"]


def test_no_system_tool_can_approve():
    from tools.catalog import all_system_tools

    assert not [t for t in all_system_tools() if "custom_tools" in t["handler_path"]]

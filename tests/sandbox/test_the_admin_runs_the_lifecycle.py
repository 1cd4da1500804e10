"""The admin: a custom tool starts as a draft, moves through the same actions as the CLI,
every change is a history row, and the audit report and tenant cannot be edited."""

import json

import pytest

from registry.custom_tools import approve_custom_tool, register_custom_tool
from registry.models import ReviewAction, ToolDefinition, ToolStatus
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db

ADD = "/admin/registry/tooldefinition/add/"
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def form(**overrides) -> dict:
    """The add/change form's fields for a custom tool of the test tenant."""
    fields = {
        "name": "from_admin",
        "description": "Adds one.",
        "tool_type": "custom",
        "status": "draft",
        "enabled": "on",
        "category": "custom",
        "tenant_id": TENANT,
        "input_schema": json.dumps(SCHEMA),
        "implementation": "result = inputs.get('n', 0) + 1",
        "handler_path": "",
        "dependencies": "[]",
        "status_message": "",
        "domain": "",
        "replaced_by_model_capability": "",
        "parent_tool": "",
        "created_by": "admin",
        "rejection_reason": "",
        "deleted_at": "",
    }
    return {**fields, **overrides}


@pytest.fixture
def admin(client, staff):
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(Permission.objects.get(codename="add_tooldefinition"))
    client.force_login(staff)
    return client


def review_url(tool) -> str:
    return f"/admin/registry/tooldefinition/{tool.pk}/review/"


def test_the_add_form_cannot_create_an_approved_custom_tool(admin):
    page = admin.post(ADD, form(status="approved")).content.decode()
    assert "a custom tool starts as a draft" in page
    assert not ToolDefinition.objects.filter(name="from_admin").exists()


def test_a_draft_from_the_admin_is_submitted_audited_and_approved_there(admin):
    response = admin.post(ADD, form())
    tool = ToolDefinition.objects.get(name="from_admin")
    assert (tool.status, response.status_code, response["Location"]) == (ToolStatus.DRAFT, 302, review_url(tool))
    assert 'name="submit"' in admin.get(review_url(tool)).content.decode()

    admin.post(review_url(tool), {"submit": "1"})
    tool.refresh_from_db()
    assert tool.status == ToolStatus.TESTING and tool.test_results["passed"] is True
    assert tool.test_results["definition_hash"] == tool.definition_hash

    admin.post(review_url(tool), {"approve": "1", "definition_hash": tool.definition_hash})
    tool.refresh_from_db()
    assert tool.status == ToolStatus.APPROVED
    assert [r.action for r in tool.reviews.order_by("id")] == [
        ReviewAction.CREATE,
        ReviewAction.SUBMIT,
        ReviewAction.AUDIT,
        ReviewAction.APPROVE,
    ]


def test_the_changelist_action_submits_drafts_for_testing(admin, staff):
    tool = register_custom_tool(
        name="drafted", code="result = 1", description="One.", input_schema=SCHEMA, tenant_id=TENANT, submit=False
    )
    admin.post("/admin/registry/tooldefinition/", {"action": "submit_for_testing", "_selected_action": [tool.pk]})
    tool.refresh_from_db()
    assert tool.status == ToolStatus.TESTING and "passed" in tool.test_results


def approved(staff, **fields):
    tool = register_custom_tool(
        name="live_one",
        code="result = inputs.get('n', 0) + 1",
        description="Adds one.",
        input_schema=SCHEMA,
        tenant_id=TENANT,
        **fields,
    )
    return approve_custom_tool(tool, acting_user=staff)


def change(admin, tool, **overrides):
    return admin.post(f"/admin/registry/tooldefinition/{tool.pk}/change/", form(name=tool.name, **overrides))


def test_an_admin_edit_of_the_code_is_a_history_row_and_needs_a_new_approval(admin, staff):
    tool = approved(staff)
    assert change(admin, tool, implementation="result = 'changed'").status_code == 302
    tool.refresh_from_db()
    edit = tool.reviews.filter(action=ReviewAction.EDIT).get()
    assert tool.status == ToolStatus.TESTING and tool.approved_hash != tool.definition_hash
    assert (edit.acting_user, edit.reason, edit.implementation) == (
        staff,
        "changed implementation",
        "result = 'changed'",
    )


def test_an_admin_edit_of_a_setting_is_a_history_row_too(admin, staff):
    tool = approved(staff)
    change(admin, tool, enabled="")
    tool.refresh_from_db()
    assert tool.status == ToolStatus.APPROVED and tool.enabled is False
    assert tool.reviews.get(action=ReviewAction.EDIT).reason == "changed enabled"


def test_the_audit_report_and_the_tenant_are_read_only_in_the_admin(admin, staff):
    tool = approved(staff)
    report = tool.test_results
    forged = {"passed": True, "review": {"verdict": "approve"}, "definition_hash": "0" * 64}
    change(admin, tool, tenant_id=OTHER_TENANT, test_results=json.dumps(forged))
    tool.refresh_from_db()
    assert (tool.tenant_id, tool.test_results, tool.status) == (TENANT, report, ToolStatus.APPROVED)


def test_a_report_of_an_earlier_definition_shows_as_stale(admin, staff):
    tool = approved(staff)
    old_hash = tool.definition_hash
    ToolDefinition.objects.filter(pk=tool.pk).update(implementation="result = 'sneaky'", status=ToolStatus.TESTING)
    page = admin.get(review_url(tool)).content.decode()
    assert "Stale: this report is of definition" in page and old_hash in page
    assert "Audit passed for this definition" not in page


def test_staff_cannot_add_a_custom_tool_for_another_tenant(admin):
    page = admin.post(ADD, form(tenant_id=OTHER_TENANT)).content.decode()
    assert "you may create custom tools only for tenant(s) acme" in page
    assert not ToolDefinition.objects.filter(name="from_admin").exists()


def test_the_add_form_names_an_unknown_dependency(admin):
    page = admin.post(ADD, form(dependencies='["creat_chart"]')).content.decode()
    assert "no tool named &#x27;creat_chart&#x27; is available to tenant &#x27;acme&#x27;" in page
    assert not ToolDefinition.objects.filter(name="from_admin").exists()


def test_running_the_auditor_again_clears_a_stale_report(admin, staff):
    tool = register_custom_tool(
        name="bulk_edited", code="result = 1", description="One.", input_schema=SCHEMA, tenant_id=TENANT
    )
    ToolDefinition.objects.filter(pk=tool.pk).update(implementation="result = 2")
    assert "Run the auditor" in admin.get(review_url(tool)).content.decode()
    admin.post(review_url(tool), {"submit": "1"})
    assert "Audit passed for this definition" in admin.get(review_url(tool)).content.decode()
    tool.refresh_from_db()
    assert approve_custom_tool(tool, acting_user=staff).approved_hash == tool.compute_definition_hash()

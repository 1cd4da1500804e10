"""The staff review page: code, schema, report, diff; approve and reject through it."""

import pytest

from registry.custom_tools import approve_custom_tool, edit_custom_tool, register_custom_tool
from registry.models import JobType, ToolJob, ToolStatus
from tests.conftest import external_assets

pytestmark = pytest.mark.django_db


@pytest.fixture
def tool():
    return register_custom_tool(
        name="reviewed",
        code="result = inputs.get('n', 0) + 1",
        input_schema={"type": "object", "properties": {}},
        description="Adds one.",
    )


@pytest.fixture
def staff_client(client, staff):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    return client


def url(tool) -> str:
    return f"/admin/registry/tooldefinition/{tool.pk}/review/"


def test_the_review_page_shows_highlighted_code_schema_and_report(staff_client, tool):
    page = staff_client.get(url(tool)).content.decode()
    assert 'class="codehilite"' in page and "Adds one." in page and tool.definition_hash in page
    assert external_assets(page) == []


def test_the_page_shows_a_diff_against_the_last_approved_version(staff_client, staff, tool):
    approve_custom_tool(tool, acting_user=staff)
    edit_custom_tool(tool, acting_user=staff, code="result = 2")
    page = staff_client.get(url(tool)).content.decode()
    assert "Changes since the last approved version" in page and "result" in page
    assert "No earlier approved version" not in page


def test_approving_from_the_page_binds_the_hash_shown(staff_client, tool):
    staff_client.post(url(tool), {"approve": "1", "definition_hash": tool.definition_hash})
    tool.refresh_from_db()
    assert tool.status == ToolStatus.APPROVED and tool.approved_hash == tool.definition_hash


def test_rejecting_from_the_page_without_a_reason_changes_nothing(staff_client, tool):
    staff_client.post(url(tool), {"reject": "1", "reason": "", "definition_hash": tool.definition_hash})
    tool.refresh_from_db()
    assert tool.status == ToolStatus.TESTING


def test_a_non_staff_user_cannot_open_the_review_page(client, django_user_model, tool):
    client.force_login(django_user_model.objects.create_user("plain"))
    assert client.get(url(tool)).status_code == 302


def test_the_job_list_shows_progress_bars(staff_client):
    ToolJob.objects.create(tool_name="x", job_type=JobType.AUDIT, tenant_id="acme", progress_pct=40)
    assert '<progress value="40" max="100">' in staff_client.get("/admin/registry/tooljob/").content.decode()

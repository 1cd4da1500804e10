"""Approving is the registry.approve_tooldefinition permission, for tools of the reviewer's tenant only."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command

from registry.custom_tools import approve_custom_tool, register_custom_tool
from registry.models import ALL_TENANTS, TenantMembership, ToolDefinition, ToolStatus
from tests.conftest import OTHER_TENANT, TENANT
from tests.sandbox.conftest import make_reviewer

pytestmark = pytest.mark.django_db


def custom(name="adds_one", tenant=TENANT):
    return register_custom_tool(
        name=name,
        code="result = inputs.get('n', 0) + 1",
        description="Adds one.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=tenant,
    )


def staff_without_the_permission(tenant=TENANT):
    """Staff of ``tenant`` who may view and change tools in the admin, but not approve them."""
    user = get_user_model().objects.create_user("looker", password="pw", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="registry", codename__in=["view_tooldefinition", "change_tooldefinition"]
        )
    )
    return user


def url(tool) -> str:
    return f"/admin/registry/tooldefinition/{tool.pk}/review/"


def status(tool) -> str:
    return ToolDefinition.objects.get(pk=tool.pk).status


def cli(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_staff_without_the_permission_cannot_approve_on_the_review_page(client):
    tool = custom()
    client.force_login(staff_without_the_permission())
    page = client.get(url(tool)).content.decode()
    assert "Adds one." in page and 'name="approve"' not in page
    client.post(url(tool), {"approve": "1", "definition_hash": tool.definition_hash})
    assert status(tool) == ToolStatus.TESTING


def test_staff_without_the_permission_cannot_approve_from_the_cli():
    custom()
    staff_without_the_permission()
    with pytest.raises(CommandError, match="registry.approve_tooldefinition permission"):
        cli("review_tool", "adds_one", "--approve", "--as", "looker")
    assert ToolDefinition.objects.get(name="adds_one").status == ToolStatus.TESTING


def test_staff_with_the_permission_approve_from_the_page(client):
    tool = custom()
    client.force_login(make_reviewer("granted"))
    client.post(url(tool), {"approve": "1", "definition_hash": tool.definition_hash})
    assert status(tool) == ToolStatus.APPROVED


def test_another_tenants_tool_is_not_found_on_the_review_page(client):
    tool = custom()
    client.force_login(make_reviewer("outsider", OTHER_TENANT))
    assert client.get(url(tool)).status_code == 404
    assert client.post(url(tool), {"approve": "1", "definition_hash": tool.definition_hash}).status_code == 404
    assert status(tool) == ToolStatus.TESTING


def test_another_tenants_tool_cannot_be_approved_from_the_cli():
    custom()
    make_reviewer("outsider", OTHER_TENANT)
    with pytest.raises(CommandError, match="belongs to tenant 'acme'"):
        cli("review_tool", "adds_one", "--approve", "--as", "outsider")
    assert ToolDefinition.objects.get(name="adds_one").status == ToolStatus.TESTING


def test_the_admin_lists_and_opens_only_the_reviewers_tenants_custom_tools(client):
    ours, theirs = custom("ours"), custom("theirs", OTHER_TENANT)
    client.force_login(make_reviewer("acme_staff"))
    listing = client.get("/admin/registry/tooldefinition/?tool_type__exact=custom").content.decode()
    assert ">ours<" in listing and ">theirs<" not in listing
    assert client.get(f"/admin/registry/tooldefinition/{ours.pk}/change/").status_code == 200
    assert client.get(f"/admin/registry/tooldefinition/{theirs.pk}/change/").status_code == 302  # "does not exist"


def test_a_shared_tool_needs_the_shared_review_permission():
    tool = custom("shared_one", ALL_TENANTS)
    with pytest.raises(PermissionDenied, match="belongs to tenant"):
        approve_custom_tool(tool, acting_user=make_reviewer("local_only", shared=False))
    assert approve_custom_tool(tool, acting_user=make_reviewer("wide")).status == ToolStatus.APPROVED


def test_a_superuser_reviews_every_tenant(client):
    tool = custom("theirs", OTHER_TENANT)
    boss = get_user_model().objects.create_user("boss", password="pw", is_staff=True, is_superuser=True)
    assert approve_custom_tool(tool, acting_user=boss).status == ToolStatus.APPROVED


def test_a_reviewer_with_no_tenant_reviews_nothing():
    user = get_user_model().objects.create_user("loose", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="approve_tooldefinition"))
    assert not ToolDefinition.objects.reviewable_by(user).exists()
    with pytest.raises(PermissionDenied):
        approve_custom_tool(custom(), acting_user=get_user_model().objects.get(pk=user.pk))


def test_the_review_history_and_build_jobs_of_another_tenant_stay_hidden(client):
    from registry.models import JobType, ToolJob

    custom("ours")
    custom("theirs", OTHER_TENANT)
    ToolJob.objects.create(tool_name="their_build", job_type=JobType.BUILD, tenant_id=OTHER_TENANT)
    reviewer = make_reviewer("acme_staff")
    reviewer.user_permissions.add(*Permission.objects.filter(codename__in=["view_toolreview", "view_tooljob"]))
    client.force_login(reviewer)
    history = client.get("/admin/registry/toolreview/").content.decode()
    assert "ours" in history and "theirs" not in history
    assert "their_build" not in client.get("/admin/registry/tooljob/").content.decode()


def test_the_review_history_cannot_be_deleted(admin_client):
    row = custom().reviews.first()
    admin_client.post(f"/admin/registry/toolreview/{row.pk}/delete/", {"post": "yes"})
    assert type(row).objects.filter(pk=row.pk).exists()

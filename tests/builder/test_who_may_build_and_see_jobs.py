"""Only staff (or holders of registry.add_tooljob) build; a tenant sees only its own jobs."""

import pytest
from django.contrib.auth.models import Permission

from registry.models import ToolJob
from registry.tool_jobs import request_build
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = "Take an integer n and return n plus one."


def test_a_plain_user_cannot_request_a_build(build, django_user_model, custom_tools_on):
    plain = django_user_model.objects.create_user("plain")
    result = build("plus_one", user_id=plain.pk)
    assert result.content == (
        "✗ error (PermissionDenied): building a tool needs a staff member or the registry.add_tooljob permission"
    )
    assert not ToolJob.objects.exists()


def test_the_permission_lets_a_non_staff_user_build(build, django_user_model, custom_tools_on):
    builder = django_user_model.objects.create_user("builder")
    builder.user_permissions.add(Permission.objects.get(codename="add_tooljob"))
    result = build("plus_one", user_id=builder.pk)
    assert result.error is None and ToolJob.objects.filter(tool_name="plus_one").exists()


def test_a_conversations_capabilities_decide_without_a_lookup(build, custom_tools_on):
    refused = build("plus_one", capabilities=frozenset({"group:x"}))
    assert "PermissionDenied" in refused.content
    allowed = build("plus_one", capabilities=frozenset({"staff"}))
    assert allowed.error is None


def test_with_custom_tools_off_the_tool_is_unavailable_and_nothing_is_queued(build, staff):
    result = build("plus_one", user_id=staff.pk)
    assert result.content.startswith("⚠ schema hint: build_custom_tool is unavailable here")
    assert "EUNICE_CUSTOM_TOOLS" in result.content and not ToolJob.objects.exists()


def test_a_taken_name_gets_a_hint_not_a_job(build, staff, custom_tools_on):
    result = build("search_tools", user_id=staff.pk)
    assert result.content.startswith("⚠ schema hint") and "already exists" in result.content


def test_another_tenants_job_is_unknown_and_never_shown(call):
    theirs = request_build(name="their_tool", request=REQUEST, tenant_id=OTHER_TENANT)
    ours = request_build(name="our_tool", request=REQUEST, tenant_id=TENANT)
    result = call("tool_job_status", job_id=theirs.pk)
    assert result.content.startswith("⚠ fetch hint") and f"no build job {theirs.pk!r}" in result.content
    assert "their_tool" not in result.content and ours.pk in result.content
    assert "our_tool is queued" in text(call("tool_job_status", job_id=ours.pk))

"""Staff curate their tenant's bundles in the admin; a wrong tool name is named with the closest."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from mcpserver.models import Bundle
from registry.models import TenantMembership
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT
from tests.mcpserver.conftest import bundle

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    user = get_user_model().objects.create_user("staff_a", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="mcpserver"))
    browser = Client()
    browser.force_login(user)
    return browser


def form(**fields) -> dict:
    return {"slug": "reports", "title": "Reports", "description": "", "tools": "[]", "enabled": "on", **fields}


def test_staff_add_a_bundle_of_their_tenants_tools(staff, make_tool):
    make_tool("weekly_report", handlers.echo)
    answer = staff.post("/admin/mcpserver/bundle/add/", form(tools='["weekly_report"]', tenant_id=OTHER_TENANT))
    assert answer.status_code == 302, answer.content[:2000]
    made = Bundle.objects.get(slug="reports")
    assert (made.tenant_id, made.tools) == (TENANT, ["weekly_report"])  # never another tenant's row


def test_a_tool_name_that_is_not_the_tenants_is_refused_with_the_closest(staff, make_tool):
    make_tool("weekly_report", handlers.echo)
    make_tool("globex_secret", handlers.echo, tenant_id=OTHER_TENANT)
    misspelt = staff.post("/admin/mcpserver/bundle/add/", form(tools='["weekly_reprot"]'))
    foreign = staff.post("/admin/mcpserver/bundle/add/", form(tools='["globex_secret"]'))
    assert "no tool &#x27;weekly_reprot&#x27;" in misspelt.content.decode()
    assert "closest: weekly_report" in misspelt.content.decode()
    assert "no tool &#x27;globex_secret&#x27;" in foreign.content.decode()
    assert not Bundle.objects.exists()


def test_staff_do_not_see_another_tenants_bundles(staff):
    bundle("ours", "plan")
    theirs = bundle("theirs", "plan", tenant=OTHER_TENANT)
    listing = staff.get("/admin/mcpserver/bundle/").content.decode()
    assert "ours" in listing and "theirs" not in listing
    assert staff.get(f"/admin/mcpserver/bundle/{theirs.pk}/change/").status_code in (302, 404)

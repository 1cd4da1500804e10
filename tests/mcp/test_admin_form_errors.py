"""The admin shows the services' refusals as form errors and keeps what was typed."""

import pytest

from registry.models import MCPServer
from tests.mcp.conftest import add_server

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "/admin/registry/mcpserver/add/"


def form(**fields) -> dict:
    return {
        "name": "web",
        "tenant_id": "acme",
        "transport": "streamable_http",
        "command": "",
        "args": "[]",
        "env": "",
        "url": "https://example.com/mcp",
        "headers": "",
        "approval_policy": "manual",
        "call_timeout_seconds": "120",
        "idempotent_tools": "[]",
        "enabled": "on",
        **fields,
    }


def test_a_loopback_url_is_a_form_error_on_the_url_and_the_form_is_kept(admin_client):
    response = admin_client.post(ADD, form(url="http://127.0.0.1:8765/mcp"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "loopback" in " ".join(errors["url"])
    page = response.content.decode()
    assert 'value="http://127.0.0.1:8765/mcp"' in page  # what was typed is still there
    assert not MCPServer.objects.exists()


def test_a_rule_of_who_may_do_what_is_a_form_error_too(admin_client, django_user_model):
    from django.contrib.auth.models import Permission

    from registry.models import TenantMembership

    plain = django_user_model.objects.create_user("pat", password="pw", is_staff=False)
    plain.user_permissions.add(*Permission.objects.filter(codename__in=["add_mcpserver", "view_mcpserver"]))
    TenantMembership.objects.create(user=plain, tenant_id="acme")
    # Admin pages need is_staff; the rule itself is the services': a server reaching private
    # addresses is staff-only whoever fills the form. Judged here through the form's own clean.
    from registry.mcp.admin import MCPServerForm

    bound = type("Form", (MCPServerForm,), {"acting_user": plain})(data=form(allow_private_network="on"))
    assert not bound.is_valid()
    assert "only staff may let a server reach private addresses" in " ".join(bound.non_field_errors())


def test_a_valid_change_still_saves_through_the_services(admin_client):
    server = add_server("web", transport="streamable_http", command="", args=[], url="https://example.com/mcp")
    # An address, not a name: nothing here resolves names off this machine.
    response = admin_client.post(
        f"/admin/registry/mcpserver/{server.pk}/change/", form(url="https://1.1.1.1/mcp"), follow=True
    )
    assert response.status_code == 200
    assert MCPServer.objects.get(pk=server.pk).url == "https://1.1.1.1/mcp"

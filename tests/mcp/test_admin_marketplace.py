"""Admin "Marketplace": search (a local fake registry), an unreachable registry, install shown first."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from registry.models import MCPServer, MCPStatus, TenantMembership
from tests.conftest import text
from tests.mcp.conftest import approve, mcp

pytestmark = pytest.mark.django_db(transaction=True)

MARKETPLACE = "/admin/registry/mcpserver/marketplace/"


def page(client, **query):
    response = client.get(MARKETPLACE, query)
    assert response.status_code == 200
    return response.content.decode()


def test_a_search_lists_registry_servers_with_the_command_they_run(admin_client, registry_url):
    found = page(admin_client, q="weather")
    assert "io.example/weather" in found and "Weather forecasts." in found
    assert "<code>uvx example-weather-mcp@1.4.2</code>" in found and "unreachable" not in found


def test_an_unreachable_registry_is_named_and_the_bundled_catalog_still_answers(admin_client, settings):
    settings.MCP_REGISTRY_URL = "http://127.0.0.1:9"
    found = page(admin_client, q="time")
    assert "the MCP registry at http://127.0.0.1:9 is unreachable" in found
    assert "showing the bundled catalog only" in found and "mcp_server_time" in found


def test_install_shows_the_exact_command_before_anything_runs(admin_client, registry_url):
    preview = page(admin_client, q="weather", install="io.example/weather")
    assert "This exact command will run on the server (no shell):" in preview
    assert "<pre>uvx example-weather-mcp@1.4.2</pre>" in preview and 'value="Install and connect"' in preview
    assert not MCPServer.objects.exists()


def test_installing_creates_the_server_connects_it_and_its_approved_tools_work(admin_client, call, registry_url):
    response = admin_client.post(MARKETPLACE, {"id": "time", "name": "clock", "tenant_id": "acme"}, follow=True)
    assert response.redirect_chain[-1][0] == "/admin/registry/mcpserver/"
    assert any(str(m).startswith("installed clock: ") for m in response.context["messages"])
    assert MCPServer.objects.get(name="clock").status == MCPStatus.CONNECTED
    assert "unknown tool" in call(mcp("get_current_time", "clock"), timezone="Asia/Tokyo").content  # pending
    approve(mcp("get_current_time", "clock"))
    assert "Asia/Tokyo" in text(call(mcp("get_current_time", "clock"), timezone="Asia/Tokyo"))


def test_a_non_staff_user_cannot_open_the_marketplace(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("plain"))
    assert client.get(MARKETPLACE).status_code == 302  # to the admin login
    assert client.post(MARKETPLACE, {"id": "time", "name": "clock"}).status_code == 302
    assert not MCPServer.objects.exists()


def test_staff_without_the_add_permission_cannot_install(client, registry_url):
    staff = get_user_model().objects.create_user("viewer", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_mcpserver"))
    TenantMembership.objects.create(user=staff, tenant_id="acme")
    client.force_login(staff)
    assert client.post(MARKETPLACE, {"id": "time", "name": "clock"}).status_code == 403
    assert not MCPServer.objects.exists()

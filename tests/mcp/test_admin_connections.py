"""Admin "My Connections": status and counts, connect/disconnect/refresh, quarantine re-approval."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils.html import escape

from registry.models import MCPAuditLog, MCPServer, MCPStatus, TenantMembership, ToolDefinition, ToolStatus
from tests.conftest import OTHER_TENANT, text
from tests.mcp.conftest import WAIT, add_server, mcp, server_id

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELIST = "/admin/registry/mcpserver/"


def act(client, action, server):
    """Run an admin action on one server; returns the messages it left, as "level: text" lines."""
    response = client.post(CHANGELIST, {"action": action, "_selected_action": [server.pk]}, follow=True)
    assert response.status_code == 200
    return "\n".join(f"{m.level_tag}: {m}" for m in response.context["messages"])


def live_tools(server):
    return ToolDefinition.objects.live().filter(created_by=server.created_by_tag)


def test_connect_from_the_list_registers_the_tools_and_shows_status_and_count(admin_client, call):
    server = add_server()
    page = act(admin_client, "connect_servers", server)
    count = live_tools(server).filter(status=ToolStatus.APPROVED).count()
    assert f"info: demo: connected ({count} tool(s))" in page and count >= 10
    server.refresh_from_db()
    assert server.status == MCPStatus.CONNECTED
    listing = admin_client.get(CHANGELIST).content.decode()
    assert f'<td class="field-tool_count">{count}</td>' in listing and "Connected" in listing
    assert text(call(mcp("add"), a=1, b=2)) == "3"


def test_disconnect_retires_the_tools_and_refresh_brings_them_back(admin_client, call):
    server = add_server()
    act(admin_client, "connect_servers", server)
    assert "demo: disconnected" in act(admin_client, "disconnect_servers", server)
    assert not live_tools(server).exists()
    assert "unknown tool" in call(mcp("add"), a=1, b=2).content

    assert "demo: refreshed" in act(admin_client, "refresh_servers", server)
    assert text(call(mcp("add"), a=1, b=2)) == "3"
    assert list(MCPAuditLog.objects.filter(server_name="demo").values_list("action", flat=True).order_by("id")) == [
        "connect",
        "disconnect",
        "refresh",
    ]


def test_a_failed_connect_shows_the_error_in_the_list(admin_client):
    server = add_server("broken", args=["-c", "import sys; sys.exit(3)"])
    page = act(admin_client, "connect_servers", server)
    assert page.startswith("error: broken: ")
    server.refresh_from_db()
    assert server.last_error and escape(server.last_error) in admin_client.get(CHANGELIST).content.decode()


def test_a_quarantined_tool_shows_old_and_new_definitions_side_by_side_and_can_be_re_approved(
    admin_client, manager, call
):
    server = add_server()
    act(admin_client, "connect_servers", server)
    before = manager.sync_count(server_id())
    assert call(mcp("rug_pull")).error is None
    assert manager.wait_synced(server_id(), before, WAIT)

    page = admin_client.get(f"{CHANGELIST}{server.pk}/tools/").content.decode()
    row = page[page.index(f"<td>{mcp('echo')}</td>") :]
    row = row[: row.index("</tr>")]
    assert "quarantined" in row
    approved, current = row.split("<pre>")[1], row.split("<pre>")[2]
    assert "evil.example" not in approved and "evil.example" in current
    assert "Approve as shown" in row
    shown = row.split('name="shown_hash" value="')[1].split('"')[0]

    echo = ToolDefinition.objects.get(name=mcp("echo"))
    admin_client.post(f"{CHANGELIST}tools/{echo.pk}/approve/", {"shown_hash": shown})
    echo.refresh_from_db()
    assert echo.status == ToolStatus.APPROVED
    assert text(call(mcp("echo"), text="back")) == "back"
    page = admin_client.get(f"{CHANGELIST}{server.pk}/tools/").content.decode()
    assert "Approve as shown" not in page[page.index(f"<td>{mcp('echo')}</td>") :].split("</tr>")[0]


def test_a_tenants_staff_never_see_another_tenants_connection(client):
    ours = add_server()
    theirs = add_server("theirs", tenant_id=OTHER_TENANT)
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_mcpserver", "change_mcpserver"]))
    TenantMembership.objects.create(user=staff, tenant_id="acme")
    client.force_login(staff)
    listing = client.get(CHANGELIST).content.decode()
    assert ours.name in listing and "theirs" not in listing
    assert client.get(f"{CHANGELIST}{theirs.pk}/tools/").status_code == 404
    response = client.post(CHANGELIST, {"action": "connect_servers", "_selected_action": [theirs.pk]})
    assert MCPServer.objects.get(pk=theirs.pk).status != MCPStatus.CONNECTED
    assert response.status_code in (200, 302)

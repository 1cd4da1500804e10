"""The REST API: tenant-scoped MCP servers, actions, tools with their state, the schema."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from registry.models import MCPAuditLog, MCPServer, ToolDefinition, ToolStatus, ToolType
from tests.conftest import OTHER_TENANT, external_assets
from tests.mcp.conftest import add_server, mcp
from tests.mcp.test_security import client_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_anonymous_requests_are_refused():
    assert APIClient().get("/api/mcp/servers/").status_code in (401, 403)


def test_a_user_sees_only_their_tenants_servers():
    add_server("mine")
    add_server("theirs", tenant_id=OTHER_TENANT)
    names = [s["name"] for s in client_for("ann").get("/api/mcp/servers/").json()["results"]]
    assert names == ["mine"]
    theirs = client_for("bob", tenant=OTHER_TENANT).get("/api/mcp/servers/").json()["results"]
    assert [s["name"] for s in theirs] == ["theirs"]


def test_another_tenants_server_cannot_be_read_or_connected():
    server = add_server("theirs", tenant_id=OTHER_TENANT)
    api = client_for("ann", staff=True)
    assert api.get(f"/api/mcp/servers/{server.pk}/").status_code == 404
    assert api.post(f"/api/mcp/servers/{server.pk}/connect/").status_code == 404


def test_connect_lists_tools_with_their_state_and_disconnect_retires_them(manager):
    server = add_server()
    api = client_for("sam", staff=True)
    found = api.post(f"/api/mcp/servers/{server.pk}/connect/").json()
    assert mcp("add") in found["tool_names"]
    tools = {t["name"]: t["state"] for t in api.get(f"/api/mcp/servers/{server.pk}/tools/").json()}
    assert tools[mcp("add")] == "active"
    assert api.post(f"/api/mcp/servers/{server.pk}/disconnect/").json()["retired"] == len(tools)
    assert api.get(f"/api/mcp/servers/{server.pk}/tools/").json() == []
    assert list(MCPAuditLog.objects.values_list("action", flat=True).order_by("id")) == ["connect", "disconnect"]


def test_a_failed_connect_is_a_502_with_the_reason_and_no_traceback(manager):
    server = add_server("ghost", command="/no/such/server", args=[])
    response = client_for("sam", staff=True).post(f"/api/mcp/servers/{server.pk}/connect/")
    assert response.status_code == 502
    assert "the command was not found" in response.json()["detail"] and "Traceback" not in response.content.decode()


def test_the_openapi_schema_and_its_ui_are_served_locally():
    api = client_for("ann")
    schema = api.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/mcp/servers/{id}/connect/" in schema.content
    ui = api.get("/api/schema/ui/")
    assert ui.status_code == 200 and b"swagger-ui-bundle.js" in ui.content
    assert external_assets(ui.content.decode()) == []


def tools_of(server, *statuses):
    for n, status in enumerate(statuses):
        ToolDefinition.objects.create(
            name=f"mcp_{server.name}_t{n}",
            description="d",
            tool_type=ToolType.MCP,
            status=status,
            created_by=server.created_by_tag,
            implementation=f"mcp:{server.pk}:t{n}",
        )


def test_a_list_of_servers_counts_their_tools_in_one_query_whatever_its_length():
    api = client_for("ann")
    tools_of(add_server("one"), ToolStatus.APPROVED, ToolStatus.DRAFT)
    with CaptureQueriesContext(connection) as one:
        listed = api.get("/api/mcp/servers/").json()["results"]
    for n in range(4):
        tools_of(add_server(f"more{n}"), ToolStatus.APPROVED)
    with CaptureQueriesContext(connection) as five:
        api.get("/api/mcp/servers/")

    assert [(s["name"], s["tool_count"]) for s in listed] == [("one", 2)]
    assert len(five) == len(one)


def test_the_admin_list_counts_approved_and_held_tools_in_one_query(admin_client):
    tools_of(add_server("one"), ToolStatus.APPROVED, ToolStatus.APPROVED, ToolStatus.DRAFT)
    with CaptureQueriesContext(connection) as one:
        page = admin_client.get("/admin/registry/mcpserver/").content.decode()
    for n in range(4):
        tools_of(add_server(f"more{n}"), ToolStatus.DRAFT)
    with CaptureQueriesContext(connection) as five:
        admin_client.get("/admin/registry/mcpserver/")

    assert '<td class="field-tool_count">2</td>' in page and '<td class="field-quarantined">1</td>' in page
    assert len(five) == len(one)


def test_a_wrong_choice_lists_the_valid_ones_and_the_closest():
    response = client_for("sam", staff=True).post(
        "/api/mcp/servers/", {"name": "x", "transport": "stdoi", "command": "true"}, format="json"
    )
    assert (response.status_code, response.json()) == (
        400,
        {"transport": ['"stdoi" is not one of: stdio, streamable_http (did you mean stdio?)']},
    )


def test_a_misspelt_field_is_refused_not_dropped():
    response = client_for("sam", staff=True).post(
        "/api/mcp/servers/", {"name": "x", "transport": "stdio", "command": "true", "enabeld": False}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["enabeld"][0].startswith("unknown field; the fields are: name, transport, command")
    assert not MCPServer.objects.filter(name="x").exists()


def test_what_a_get_returned_can_be_sent_back():
    api = client_for("sam", staff=True)
    server = add_server("demo")
    shown = api.get(f"/api/mcp/servers/{server.pk}/").json()
    response = api.put(f"/api/mcp/servers/{server.pk}/", {**shown, "enabled": False}, format="json")
    assert response.status_code == 200, response.json()
    assert MCPServer.objects.get(pk=server.pk).enabled is False


@pytest.mark.parametrize("timeout", [0, -1, 0.01, 1e9])
def test_a_call_timeout_out_of_bounds_is_a_400_naming_the_bounds_never_a_500(timeout):
    api = client_for("sam", staff=True)
    body = {"name": "x", "transport": "stdio", "command": "true", "call_timeout_seconds": timeout}
    response = api.post("/api/mcp/servers/", body, format="json")
    assert response.status_code == 400 and list(response.json()) == ["call_timeout_seconds"]
    server = add_server("demo")
    changed = api.patch(f"/api/mcp/servers/{server.pk}/", {"call_timeout_seconds": timeout}, format="json")
    assert changed.status_code == 400 and list(changed.json()) == ["call_timeout_seconds"]
    assert not MCPServer.objects.filter(name="x").exists()

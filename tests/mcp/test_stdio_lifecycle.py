"""Connecting a real stdio server registers its tools; disconnecting retires them."""

import pytest

from registry.mcp.config import ServerConfig
from registry.models import MCPServer, ToolDefinition, ToolStatus, ToolType
from tests.conftest import OTHER_TENANT, text
from tests.mcp.conftest import add_server, mcp, server_id

pytestmark = pytest.mark.django_db(transaction=True)


def connect(manager, name="demo", **fields):
    return manager.connect(ServerConfig.from_model(add_server(name, **fields)))


def test_connect_reports_the_tools_it_discovered(manager):
    found = connect(manager)
    assert found["tools_discovered"] == len(found["tool_names"]) >= 10
    assert mcp("add") in found["tool_names"]


def test_discovered_tools_are_approved_mcp_rows_of_the_servers_tenant(manager):
    connect(manager)
    row = ToolDefinition.objects.get(name=mcp("add"))
    assert (row.tool_type, row.status, row.tenant_id) == (ToolType.MCP, ToolStatus.APPROVED, "acme")
    assert row.created_by == f"mcp:{server_id()}"
    assert row.description == "[MCP: demo] Add two integers."
    assert row.implementation == f"mcp:{server_id()}:add"


def test_a_connected_tool_is_called_through_the_one_dispatch_path(manager, call):
    connect(manager)
    assert text(call(mcp("add"), a=2, b=3)) == "5"


def test_the_server_row_records_the_connection(manager):
    connect(manager)
    server = MCPServer.objects.get(name="demo")
    assert server.status == "connected" and server.connected_at is not None and server.last_error == ""


def test_another_tenant_can_neither_see_nor_call_the_servers_tools(manager, call, registry):
    connect(manager)
    assert mcp("add") not in {t["name"] for t in registry.get_tools_for_llm(OTHER_TENANT)}
    assert "unknown tool" in call(mcp("add"), tenant=OTHER_TENANT, a=1, b=1).content


def test_disconnect_soft_deletes_the_servers_rows(manager, call):
    connect(manager)
    manager.disconnect(server_id())
    assert not ToolDefinition.objects.live().filter(created_by=f"mcp:{server_id()}").exists()
    assert MCPServer.objects.get(name="demo").status == "disconnected"
    assert "unknown tool" in call(mcp("add"), a=1, b=1).content


def test_reconnect_brings_the_tools_back(manager, call):
    server = add_server()
    manager.connect(ServerConfig.from_model(server))
    manager.reconnect(ServerConfig.from_model(server))
    assert text(call(mcp("add"), a=1, b=1)) == "2"

"""Under the manual policy a tool is pending until approved, whenever it appears."""

import json

import pytest

from registry.mcp.config import ServerConfig
from registry.models import MCPServer, ToolDefinition, ToolStatus
from tests.conftest import text
from tests.mcp.conftest import SHIFTING, approve, entry, mcp, shift, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


def state(name):
    row = ToolDefinition.objects.live().get(name=mcp(name, "shifty"))
    return row.status, row.status_message.split(":")[0]


def test_a_server_that_connects_with_no_tools_gets_none_approved_later(manager, call, registry):
    server = shifting_server(tools=[])
    manager.connect(ServerConfig.from_model(server))
    shift(manager, server, [entry("wipe", "Delete everything.")])
    assert state("wipe") == (ToolStatus.TESTING, "pending")
    assert mcp("wipe", "shifty") not in {t["name"] for t in registry.get_tools_for_llm("acme")}
    assert "unknown tool" in call(mcp("wipe", "shifty")).content


def test_the_tools_of_a_first_connect_are_pending_too(manager, call):
    server = shifting_server(tools=[entry("read")])
    found = manager.connect(ServerConfig.from_model(server))
    assert found["tool_names"] == [] and state("read") == (ToolStatus.TESTING, "pending")
    approve(mcp("read", "shifty"))
    assert text(call(mcp("read", "shifty"))) == "read ran"


def test_a_tool_that_appears_on_reconnect_is_pending_and_an_approved_one_stays_approved(manager, call):
    server = shifting_server(tools=[entry("read")])
    manager.connect(ServerConfig.from_model(server))
    approve(mcp("read", "shifty"))
    # The next process of this server starts with one more tool.
    MCPServer.objects.filter(pk=server.pk).update(args=[SHIFTING, json.dumps([entry("read"), entry("write")])])
    manager.reconnect(ServerConfig.from_model(MCPServer.objects.get(pk=server.pk)))
    assert state("read") == (ToolStatus.APPROVED, "")
    assert state("write") == (ToolStatus.TESTING, "pending")
    assert "unknown tool" in call(mcp("write", "shifty")).content

"""enabled=false takes a connected server's tools away at once, and keeps them away."""

import pytest

from registry.mcp import MCPError, services
from registry.mcp.config import ServerConfig
from registry.models import MCPServer, ToolDefinition
from tests.conftest import text
from tests.mcp.conftest import add_server, mcp, reviewer

pytestmark = pytest.mark.django_db(transaction=True)


def test_disabling_a_connected_server_disconnects_it_and_hides_its_tools(manager, call, registry):
    server = add_server()
    manager.connect(ServerConfig.from_model(server))
    assert text(call(mcp("add"), a=1, b=2)) == "3"

    services.update_server(server, acting_user=reviewer(), enabled=False)
    assert not manager.is_connected(server.pk)
    assert not ToolDefinition.objects.live().filter(created_by=server.created_by_tag).exists()
    assert mcp("add") not in {t["name"] for t in registry.get_tools_for_llm("acme")}
    assert "unknown tool" in call(mcp("add"), a=1, b=2).content


def test_a_disabled_server_is_not_connected_again(manager):
    server = add_server(enabled=False)
    with pytest.raises(MCPError, match="disabled"):
        services.connect_server(server, acting_user=reviewer())
    assert manager.ensure_connected(server.pk) == "its MCP server is not configured or is disabled"
    assert not manager.is_connected(server.pk)
    assert MCPServer.objects.get(pk=server.pk).status == "disconnected"

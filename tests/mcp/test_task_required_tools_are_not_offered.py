"""A tool that must run as an MCP task (which Eunice's client lacks) is never offered, and says why."""

import pytest
from django.core.exceptions import ValidationError

from registry.mcp import services
from registry.mcp.config import ServerConfig
from registry.models import ToolDefinition, ToolStatus
from tests.conftest import text
from tests.mcp.conftest import entry, mcp, reviewer, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_required_tool_is_held_as_unsupported_even_under_auto_approval(manager, call, registry, admin_client):
    server = shifting_server(
        tools=[
            entry("report", execution={"taskSupport": "required"}),
            entry("quick", execution={"taskSupport": "optional"}),
        ],
        approval_policy="auto",
    )
    manager.connect(ServerConfig.from_model(server))
    row = ToolDefinition.objects.get(name=mcp("report", "shifty"))
    assert row.status == ToolStatus.TESTING and row.status_message.startswith("unsupported: it must run as an MCP task")
    offered = {t["name"] for t in registry.get_tools_for_llm("acme")}
    assert mcp("report", "shifty") not in offered and mcp("quick", "shifty") in offered
    assert "unknown tool" in call(mcp("report", "shifty")).content
    assert text(call(mcp("quick", "shifty"))) == "quick ran"

    page = admin_client.get(f"/admin/registry/mcpserver/{server.pk}/tools/").content.decode()
    assert "execution.taskSupport: required" in page and "cannot run here" in page
    with pytest.raises(ValidationError, match="cannot run here"):
        services.approve_tool(row, acting_user=reviewer(), shown_hash=row.test_results["hash"])

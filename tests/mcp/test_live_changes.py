"""tools/list_changed updates rows live; a changed definition is quarantined until re-approved."""

import pytest
from django.contrib.auth import get_user_model

from registry.mcp import services
from registry.mcp.config import ServerConfig
from registry.models import MCPAuditLog, ToolDefinition, ToolStatus
from tests.conftest import text
from tests.mcp.conftest import WAIT, add_server

pytestmark = pytest.mark.django_db(transaction=True)


def connect(manager, **fields):
    manager.connect(ServerConfig.from_model(add_server(**fields)))


def trigger(manager, call, tool):
    before = manager.sync_count("demo")
    assert call(tool).error is None
    assert manager.wait_synced("demo", before, WAIT)


def test_a_new_tool_waits_for_approval_under_the_manual_policy(manager, call, registry):
    connect(manager)
    trigger(manager, call, "mcp_demo_grow")
    row = ToolDefinition.objects.get(name="mcp_demo_extra")
    assert row.status == ToolStatus.TESTING and row.status_message.startswith("pending")
    assert "mcp_demo_extra" not in {t["name"] for t in registry.get_tools_for_llm("acme")}


def test_a_new_tool_is_callable_at_once_under_the_auto_policy(manager, call):
    connect(manager, approval_policy="auto")
    trigger(manager, call, "mcp_demo_grow")
    assert text(call("mcp_demo_extra")) == "extra!"


def test_a_rewritten_description_quarantines_the_tool(manager, call, registry):
    connect(manager)
    trigger(manager, call, "mcp_demo_rug_pull")
    row = ToolDefinition.objects.get(name="mcp_demo_echo")
    assert row.status == ToolStatus.TESTING and row.status_message.startswith("quarantined")
    assert "mcp_demo_echo" not in {t["name"] for t in registry.get_tools_for_llm("acme")}
    assert "unknown tool" in call("mcp_demo_echo", text="x").content


def test_staff_re_approval_makes_the_quarantined_tool_callable_again(manager, call):
    connect(manager)
    trigger(manager, call, "mcp_demo_rug_pull")
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    services.approve_tool(ToolDefinition.objects.get(name="mcp_demo_echo"), acting_user=staff)
    assert text(call("mcp_demo_echo", text="back")) == "back"
    assert MCPAuditLog.objects.filter(action="approve_tool", actor="sam").exists()


def test_approval_survives_a_reconnect_but_drift_does_not(manager, call):
    server = add_server()
    manager.connect(ServerConfig.from_model(server))
    trigger(manager, call, "mcp_demo_rug_pull")
    manager.reconnect(ServerConfig.from_model(server))  # a fresh process: echo is back to normal
    assert ToolDefinition.objects.get(name="mcp_demo_echo").status == ToolStatus.APPROVED

"""tools/list_changed updates rows live; a changed definition is quarantined until re-approved."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from registry.mcp import services
from registry.mcp.config import ServerConfig
from registry.models import MCPAuditLog, ToolDefinition, ToolStatus
from tests.conftest import text
from tests.mcp.conftest import WAIT, add_server, approve, mcp, server_id

pytestmark = pytest.mark.django_db(transaction=True)


def connect(manager, **fields):
    manager.connect(ServerConfig.from_model(add_server(**fields)))


def trigger(manager, call, tool):
    before = manager.sync_count(server_id())
    assert call(tool).error is None
    assert manager.wait_synced(server_id(), before, WAIT)


def test_a_new_tool_waits_for_approval_under_the_manual_policy(manager, call, registry):
    connect(manager, approval_policy="manual")
    approve(mcp("grow"))  # the trigger itself
    trigger(manager, call, mcp("grow"))
    row = ToolDefinition.objects.get(name=mcp("extra"))
    assert row.status == ToolStatus.TESTING and row.status_message.startswith("pending")
    assert mcp("extra") not in {t["name"] for t in registry.get_tools_for_llm("acme")}


def test_a_new_tool_is_callable_at_once_under_the_auto_policy(manager, call):
    connect(manager, approval_policy="auto")
    trigger(manager, call, mcp("grow"))
    assert text(call(mcp("extra"))) == "extra!"


def test_a_rewritten_description_quarantines_the_tool(manager, call, registry):
    connect(manager)
    trigger(manager, call, mcp("rug_pull"))
    row = ToolDefinition.objects.get(name=mcp("echo"))
    assert row.status == ToolStatus.TESTING and row.status_message.startswith("quarantined")
    assert mcp("echo") not in {t["name"] for t in registry.get_tools_for_llm("acme")}
    assert "unknown tool" in call(mcp("echo"), text="x").content


def test_staff_re_approval_makes_the_quarantined_tool_callable_again(manager, call):
    connect(manager)
    trigger(manager, call, mcp("rug_pull"))
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="approve_mcp_tool"))
    row = ToolDefinition.objects.get(name=mcp("echo"))
    services.approve_tool(row, acting_user=staff, shown_hash=row.test_results["hash"])
    assert text(call(mcp("echo"), text="back")) == "back"
    assert MCPAuditLog.objects.filter(action="approve_tool", actor="sam").exists()


def test_approval_survives_a_reconnect_but_drift_does_not(manager, call):
    server = add_server()
    manager.connect(ServerConfig.from_model(server))
    trigger(manager, call, mcp("rug_pull"))
    manager.reconnect(ServerConfig.from_model(server))  # a fresh process: echo is back to normal
    assert ToolDefinition.objects.get(name=mcp("echo")).status == ToolStatus.APPROVED

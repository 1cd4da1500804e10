"""mcp_add / mcp_connect / mcp_list / mcp_disconnect / mcp_remove, then call_tool lazily connecting."""

import json
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from registry.models import MCPServer, ToolDefinition
from tests.mcp.conftest import DEMO, mcp

pytestmark = pytest.mark.django_db(transaction=True)


def run(capsys, *args):
    call_command(*args)
    return capsys.readouterr().out


def test_add_connect_list_and_call_from_a_fresh_manager(capsys, manager, monkeypatch):
    from registry.mcp import manager as manager_module

    run(capsys, "mcp_add", "demo", "--stdio", f"{sys.executable} {DEMO}", "--tenant", "acme", "--approval", "auto")
    assert "connected demo" in run(capsys, "mcp_connect", "demo")
    listed = json.loads(run(capsys, "mcp_list", "--json"))
    assert listed[0]["name"] == "demo" and listed[0]["status"] == "connected" and listed[0]["tools"] >= 10
    # call_tool runs in a fresh process: no session, so it connects from the row.
    monkeypatch.setattr(manager_module.get_manager, "_value", manager_module.MCPManager())
    assert run(capsys, "call_tool", mcp("add"), "--tenant", "acme", "--input", '{"a": 4, "b": 5}').strip().endswith("9")


def test_add_refuses_a_private_url_unless_allowed(capsys):
    with pytest.raises(CommandError, match="loopback"):
        call_command("mcp_add", "web", "--url", "http://127.0.0.1:9/mcp")
    run(capsys, "mcp_add", "web", "--url", "http://127.0.0.1:9/mcp", "--allow-private")
    assert MCPServer.objects.get(name="web").allow_private_network


def test_an_oauth_server_is_added_with_the_link_that_authorizes_it(capsys):
    said = run(capsys, "mcp_add", "linear", "--url", "http://127.0.0.1:9/mcp", "--allow-private", "--oauth", "user")
    server = MCPServer.objects.get(name="linear")
    assert server.authorization == "user" and f"/mcp-oauth/{server.pk}/connect/" in said


def test_disconnect_and_remove_retire_the_tools(capsys, manager):
    run(capsys, "mcp_add", "demo", "--stdio", f"{sys.executable} {DEMO}")
    run(capsys, "mcp_connect", "demo")
    assert "retired" in run(capsys, "mcp_disconnect", "demo")
    run(capsys, "mcp_remove", "demo")
    assert not MCPServer.objects.exists()
    assert not ToolDefinition.objects.live().filter(tool_type="mcp").exists()


def test_without_the_sdk_connect_says_how_to_install_it(capsys, monkeypatch):
    import registry.mcp as mcp_package

    run(capsys, "mcp_add", "demo", "--stdio", f"{sys.executable} {DEMO}")
    monkeypatch.setattr(mcp_package.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(Exception, match="MCP SDK not installed. Run: pip install mcp"):
        call_command("mcp_connect", "demo")

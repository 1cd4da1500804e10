"""MCP cast: real servers (the SDK demo server over stdio and HTTP, mcp-server-time)."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from registry.mcp import manager as manager_module
from registry.mcp.naming import tool_name
from registry.models import MCPServer
from tests.conftest import TENANT
from tests.ports import free_port

DEMO = str(Path(__file__).with_name("servers") / "demo.py")
ROGUE = str(Path(__file__).with_name("servers") / "rogue.py")
SHIFTING = str(Path(__file__).with_name("servers") / "shifting.py")
OAUTH_SERVER = str(Path(__file__).with_name("servers") / "oauth.py")
WAIT = 30.0  # the bound on every wait in these tests


@pytest.fixture(autouse=True)
def manager(monkeypatch, settings):
    """A fresh manager per test, stopped (its servers closed) at the end.

    It waits up to 60 s for a server to connect: no test here is about the product's
    10 s, and on a loaded machine (CI's three passes on two cores) starting a server
    process and importing the SDK has taken longer."""
    monkeypatch.setattr(manager_module, "CONNECT_TIMEOUT", 60.0)
    fresh = manager_module.MCPManager()
    monkeypatch.setattr(manager_module.get_manager, "_value", fresh)
    yield fresh
    fresh.stop()


def add_server(name: str = "demo", **fields) -> MCPServer:
    """A server row made by staff. Its tools are approved as they appear unless a test
    asks for ``approval_policy="manual"`` (the product's default): most tests here are
    about calling tools, the approval tests say so."""
    defaults = {
        "tenant_id": TENANT,
        "transport": "stdio",
        "command": sys.executable,
        "args": [DEMO],
        "approval_policy": "auto",
    }
    return MCPServer.objects.create(name=name, **{**defaults, **fields})


def mcp(tool: str, server: str = "demo", tenant: str = TENANT) -> str:
    """The registered name of a server's tool."""
    return tool_name(tenant, server, tool)


def reviewer(username: str = "rita", tenant: str = TENANT):
    """A staff member of the tenant holding the permission to approve MCP tools."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from registry.models import TenantMembership

    user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": True})
    if created:
        TenantMembership.objects.create(user=user, tenant_id=tenant)
        user.user_permissions.add(
            *Permission.objects.filter(codename__in=["approve_mcp_tool", "view_mcpserver", "change_mcpserver"])
        )
    return get_user_model().objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


def approve(registered_name: str) -> None:
    """Staff approve the tool as its row shows it (what the review page shows)."""
    from registry.mcp import services
    from registry.models import ToolDefinition

    row = ToolDefinition.objects.live().get(name=registered_name)
    services.approve_tool(row, acting_user=reviewer(), shown_hash=row.test_results["hash"])


def entry(name: str, description: str = "", **fields) -> dict:
    """A raw tools/list entry for the shifting server."""
    return {
        "name": name,
        "description": description or f"The {name} tool.",
        "inputSchema": {"type": "object"},
        **fields,
    }


def shifting_server(name: str = "shifty", tools: list | None = None, **fields) -> MCPServer:
    """A server row for tests/mcp/servers/shifting.py, under the manual policy unless told."""
    return add_server(name, args=[SHIFTING, json.dumps(tools or [])], **{"approval_policy": "manual", **fields})


def shift(manager, server: MCPServer, tools: list, *, notify: int = 1) -> None:
    """Change the running server's tool list; with ``notify`` wait until the rows follow."""
    before = manager.sync_count(server.pk)
    from registry.contract import Err

    result = manager.call_tool(server.pk, "control", {"tools": tools, "notify": notify})
    assert not isinstance(result, Err), result
    if notify:
        assert manager.wait_synced(server.pk, before, WAIT)


def server_id(name: str = "demo", tenant: str = TENANT) -> int:
    return MCPServer.objects.get(name=name, tenant_id=tenant).pk


@pytest.fixture(scope="session")
def http_demo():
    """The demo server on Streamable HTTP, on loopback; yields its URL."""
    port = free_port()
    with serving([DEMO, "http", str(port)], "Uvicorn running on"):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def serving(args: list[str], ready: str):
    """A Python server process (``args``), from the moment it says ``ready`` on stderr until
    the block ends."""
    process = subprocess.Popen(
        [sys.executable, *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    try:
        while ready not in lines.get(timeout=WAIT):
            pass
        yield process
    finally:
        process.terminate()
        process.wait(timeout=WAIT)
        process.stderr.close()


LISTING = {
    "servers": [
        {
            "server": {
                "name": "io.example/weather",
                "description": "Weather forecasts.",
                "packages": [{"registryType": "pypi", "identifier": "example-weather-mcp", "version": "1.4.2"}],
            }
        }
    ]
}


class FakeRegistry(BaseHTTPRequestHandler):
    """The MCP registry's search API, answering every query with LISTING."""

    def do_GET(self):  # noqa: N802
        body = json.dumps(LISTING).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def registry_url(settings):
    """A local fake MCP registry, configured as MCP_REGISTRY_URL."""
    server = HTTPServer(("127.0.0.1", 0), FakeRegistry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.MCP_REGISTRY_URL = f"http://127.0.0.1:{server.server_port}"
    yield settings.MCP_REGISTRY_URL
    server.shutdown()
    server.server_close()

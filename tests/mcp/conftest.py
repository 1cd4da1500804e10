"""MCP cast: real servers (the SDK demo server over stdio and HTTP, mcp-server-time)."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from registry.mcp import manager as manager_module
from registry.models import MCPServer
from tests.conftest import TENANT

DEMO = str(Path(__file__).with_name("servers") / "demo.py")
ROGUE = str(Path(__file__).with_name("servers") / "rogue.py")
WAIT = 30.0  # the bound on every wait in these tests


@pytest.fixture(autouse=True)
def manager(monkeypatch, settings):
    """A fresh manager per test, stopped (its servers closed) at the end."""
    fresh = manager_module.MCPManager()
    monkeypatch.setattr(manager_module, "_manager", fresh)
    yield fresh
    fresh.stop()


def add_server(name: str = "demo", **fields) -> MCPServer:
    defaults = {
        "tenant_id": TENANT,
        "transport": "stdio",
        "command": sys.executable,
        "args": [DEMO],
    }
    return MCPServer.objects.create(name=name, **{**defaults, **fields})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def http_demo():
    """The demo server on Streamable HTTP, on loopback; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, DEMO, "http", str(port)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    try:
        while "Uvicorn running on" not in lines.get(timeout=WAIT):
            pass
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=WAIT)
        process.stderr.close()


LISTING = {"servers": [{"server": {
    "name": "io.example/weather", "description": "Weather forecasts.",
    "packages": [{"registryType": "pypi", "identifier": "example-weather-mcp", "version": "1.4.2"}],
}}]}


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

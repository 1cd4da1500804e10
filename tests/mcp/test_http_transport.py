"""Streamable HTTP servers: connect on loopback when allowed, refused otherwise, 500s are clear."""

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.urls import UnsafeURL
from tests.conftest import text
from tests.mcp.conftest import add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


def http_server(**fields):
    return ServerConfig.from_model(add_server("web", transport="streamable_http", command="", args=[], **fields))


def test_a_loopback_server_is_refused_unless_private_urls_are_allowed(manager, http_demo):
    with pytest.raises(UnsafeURL, match="loopback"):
        manager.connect(http_server(url=http_demo))


def test_tools_over_streamable_http_go_through_the_one_path(manager, http_demo, call):
    manager.connect(http_server(url=http_demo, allow_private_network=True))
    assert text(call(mcp("add", "web"), a=20, b=22)) == "42"
    assert "MCPToolError" in call(mcp("fail", "web")).content


def test_the_global_setting_allows_private_urls_for_development(manager, http_demo, settings):
    settings.MCP_ALLOW_PRIVATE_URLS = True
    assert manager.connect(http_server(url=http_demo))["tools_discovered"] >= 10


class Always500(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_server_answering_500_fails_to_connect_with_a_clear_error(manager):
    server = HTTPServer(("127.0.0.1", 0), Always500)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(MCPError, match="the server answered HTTP 500 Internal Server Error"):
            manager.connect(http_server(url=f"http://127.0.0.1:{server.server_port}/mcp", allow_private_network=True))
    finally:
        server.shutdown()
        server.server_close()


def serve(status: int, headers: dict, hits: list) -> HTTPServer:
    """A loopback server answering every request with ``status`` and ``headers``; paths land in ``hits``."""

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(status)
            for name, value in {**headers, "Content-Length": "0"}.items():
                self.send_header(name, value)
            self.end_headers()

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_redirect_is_not_followed(manager):
    followed: list = []
    target = serve(500, {}, followed)
    elsewhere = f"http://127.0.0.1:{target.server_port}/elsewhere"
    redirect = serve(307, {"Location": elsewhere}, [])
    try:
        with pytest.raises(MCPError) as refused:
            manager.connect(http_server(url=f"http://127.0.0.1:{redirect.server_port}/mcp", allow_private_network=True))
    finally:
        for server in (redirect, target):
            server.shutdown()
            server.server_close()
    assert followed == [], "the client followed the redirect"
    assert f"Redirect to {elsewhere} not followed" in str(refused.value)

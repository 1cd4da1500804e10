"""A server that fails says why: its stderr tail on exit, the HTTP status (and a wish for authorization)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.models import MCPServer
from tests.mcp.conftest import add_server, mcp
from tests.mcp.test_http_transport import http_server, serve

pytestmark = pytest.mark.django_db(transaction=True)


def failing(script: str, **fields) -> ServerConfig:
    return ServerConfig.from_model(add_server("broken", args=["-c", script], **fields))


def test_a_server_that_exits_at_start_up_shows_its_last_stderr_lines(manager):
    script = (
        "import sys; print('loading config', file=sys.stderr);"
        " print('error: GITHUB_TOKEN is not set', file=sys.stderr); sys.exit(3)"
    )
    with pytest.raises(MCPError) as failed:
        manager.connect(failing(script))
    message = str(failed.value)
    assert (
        "the server process exited with code 3; its last stderr lines:\nloading config\nerror: GITHUB_TOKEN is not set"
        in message
    )
    assert "Connection closed" not in message
    row = MCPServer.objects.get(name="broken")
    assert row.status == "failed" and "error: GITHUB_TOKEN is not set" in row.last_error


def test_the_servers_own_secrets_are_not_echoed_from_its_stderr(manager):
    script = "import os, sys; print('token=' + os.environ['API_TOKEN'], file=sys.stderr); sys.exit(1)"
    with pytest.raises(MCPError) as failed:
        manager.connect(failing(script, env={"API_TOKEN": "tok-9f8e7d6c5b4a"}))
    assert "token=[redacted]" in str(failed.value)
    assert "tok-9f8e7d6c5b4a" not in str(failed.value)
    assert "tok-9f8e7d6c5b4a" not in MCPServer.objects.get(name="broken").last_error


def test_the_stderr_kept_is_bounded_in_lines_and_characters(manager):
    script = "import sys\nfor n in range(5000): print(f'line {n} ' + 'x' * 200, file=sys.stderr)\nsys.exit(2)"
    with pytest.raises(MCPError) as failed:
        manager.connect(failing(script))
    tail = str(failed.value).split("its last stderr lines:\n", 1)[1]
    assert len(tail) <= 1501 and len(tail.splitlines()) <= 20  # registry.mcp.stdio STDERR_CHARS, STDERR_LINES
    assert tail.rstrip().endswith("line 4999 " + "x" * 200)


@contextmanager
def answering(status: int, headers: dict | None = None) -> Iterator[ServerConfig]:
    """A loopback HTTP server answering every request with ``status``, as a server config."""
    server = serve(status, headers or {}, [])
    try:
        yield http_server(url=f"http://127.0.0.1:{server.server_port}/mcp", allow_private_network=True)
    finally:
        server.shutdown()
        server.server_close()


def test_a_401_names_the_status_and_says_the_server_wants_authorization(manager):
    challenge = 'Bearer resource_metadata="https://auth.example/.well-known"'
    with answering(401, {"WWW-Authenticate": challenge}) as config, pytest.raises(MCPError) as failed:
        manager.connect(config)
    message = str(failed.value)
    assert "the server answered HTTP 401 Unauthorized; it wants authorization" in message
    assert f"WWW-Authenticate: {challenge}" in message
    assert "Server returned an error response" not in message
    assert "HTTP 401 Unauthorized" in MCPServer.objects.get(name="web").last_error


def test_a_403_names_the_status(manager):
    expected = "HTTP 403 Forbidden; the credentials in the server's headers are not allowed"
    with answering(403) as config, pytest.raises(MCPError, match=expected):
        manager.connect(config)


def test_a_server_that_writes_much_to_stderr_is_drained_and_keeps_answering(manager, call):
    """A megabyte on stderr before it serves: a pipe left full would stall it at start-up."""
    from tests.mcp.conftest import DEMO

    script = (
        "import runpy, sys\nfor _ in range(1000): print('x' * 1000, file=sys.stderr)\n"
        f"sys.argv = [{DEMO!r}]\nrunpy.run_path({DEMO!r}, run_name='__main__')"
    )
    manager.connect(ServerConfig.from_model(add_server("demo", args=["-c", script])))
    assert "42" in call(mcp("add"), a=20, b=22).content


def test_a_server_that_stops_reading_then_exits_shows_its_exit_and_stderr(manager):
    # It answers the handshake, then closes its stdin: the client's next message finds the
    # pipe broken while the server is still alive, before its stdout closes.
    script = (
        "import json, os, sys, time\n"
        "request = json.loads(sys.stdin.readline())\n"
        "answer = {'jsonrpc': '2.0', 'id': request['id'], 'result': {"
        "'protocolVersion': request['params']['protocolVersion'], 'capabilities': {'tools': {}},"
        " 'serverInfo': {'name': 'broken', 'version': '1'}}}\n"
        "print(json.dumps(answer), flush=True)\n"
        "os.close(0)\n"
        "time.sleep(0.3)\n"
        "print('error: the license expired', file=sys.stderr)\n"
        "sys.exit(4)\n"
    )
    with pytest.raises(MCPError) as failed:
        manager.connect(failing(script))
    assert "the server process exited with code 4; its last stderr lines:\nerror: the license expired" in str(
        failed.value
    )

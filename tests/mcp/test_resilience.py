"""Slow, failing, crashing and misbehaving servers give clear errors and break nothing else."""

import pytest

from registry.mcp.breaker import CircuitBreaker
from registry.mcp.config import ServerConfig
from registry.models import MCPServer
from tests.conftest import text
from tests.mcp.conftest import ROGUE, WAIT, add_server, mcp, server_id

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two(manager):
    """Two servers: `demo` gets abused, `other` must keep working."""
    manager.connect(ServerConfig.from_model(add_server(call_timeout_seconds=1.0)))
    manager.connect(ServerConfig.from_model(add_server("other")))


def test_a_slow_call_times_out_with_the_servers_timeout(two, call):
    result = call(mcp("slow"), seconds=5)
    assert result.content == "✗ error (TimeoutError): MCP server 'demo' did not answer 'slow' within 1 s"
    assert text(call(mcp("add"), a=1, b=1)) == "2"


def test_a_crashed_server_is_reconnected_and_others_keep_working(two, call, manager):
    result = call(mcp("crash"))
    assert "MCPConnectionLost" in result.content and "exited with code 3" in result.content
    assert text(call(mcp("add", "other"), a=1, b=1)) == "2"
    assert manager.wait_connected(server_id("demo"), WAIT)
    assert text(call(mcp("add"), a=2, b=2)) == "4"


@pytest.fixture
def rogue(manager):
    manager.connect(ServerConfig.from_model(add_server("rogue", args=[ROGUE])))
    manager.connect(ServerConfig.from_model(add_server("other")))


def test_non_json_output_fails_the_call_with_a_clear_reason(rogue, call, manager):
    result = call(mcp("garbage", "rogue"))
    assert result.content == (
        "✗ error (MCPConnectionLost): MCP server 'rogue' went away during the call: "
        "the server wrote non-JSON-RPC output on stdout: 'this is not json'; reconnecting"
    )
    assert text(call(mcp("add", "other"), a=1, b=2)) == "3"
    assert manager.wait_connected(server_id("rogue"), WAIT)
    assert MCPServer.objects.get(name="rogue").last_error.startswith("the server wrote non-JSON")


def test_a_10_mb_line_is_refused_and_others_keep_working(rogue, call):
    assert "the server wrote a stdout line over 8 MB" in call(mcp("huge", "rogue")).content
    assert text(call(mcp("add", "other"), a=1, b=2)) == "3"


def test_a_crash_is_not_retried_unless_the_tool_is_idempotent(manager, call):
    manager.connect(ServerConfig.from_model(add_server(idempotent_tools=["add"])))
    assert "MCPConnectionLost" in call(mcp("crash")).content  # crash is not idempotent


def test_the_breaker_opens_after_five_failures_and_retries_after_sixty_seconds():
    breaker = CircuitBreaker()
    for _ in range(4):
        breaker.failure(now=0.0)
    assert breaker.blocked_for(now=0.0) == 0.0
    breaker.failure(now=0.0)
    assert breaker.blocked_for(now=30.0) == 30.0
    assert breaker.blocked_for(now=60.0) == 0.0  # one trial call
    assert breaker.blocked_for(now=61.0) > 0  # others wait for its outcome
    breaker.success()
    assert breaker.blocked_for(now=61.0) == 0.0


def test_an_open_breaker_fails_fast_naming_the_pause(two, call, manager):
    for _ in range(5):
        call(mcp("slow"), seconds=5)
    result = call(mcp("add"), a=1, b=1)
    assert "failed 5 calls in a row; calls are paused for" in result.content

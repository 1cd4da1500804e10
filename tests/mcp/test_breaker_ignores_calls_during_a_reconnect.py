"""Calls made while a crashed server reconnects wait for it; past the wait they say what is
happening, and they never open the breaker."""

import time

import pytest

from registry.mcp import manager as manager_module
from registry.mcp.breaker import FAILURE_THRESHOLD
from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import WAIT, entry, mcp, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def crashed(manager, tmp_path):
    """A server that crashed and whose restarted process takes 3 s to start."""
    server = shifting_server(tools=[entry("add")], approval_policy="auto")
    server.args = [*server.args, str(tmp_path / "slow")]
    server.save()
    manager.connect(ServerConfig.from_model(server))
    assert manager.call_tool(server.pk, "control", {"exit": 3, "slow_restart": True}).err_kind == "MCPConnectionLost"
    return server


def test_a_call_made_during_a_reconnect_waits_for_it_and_is_answered(manager, crashed, call):
    assert not manager.wait_connected(crashed.pk, 0)
    assert text(call(mcp("add", "shifty"))) == "add ran"


def test_calls_past_the_reconnect_wait_are_not_counted_and_name_the_reconnect(manager, crashed, call, monkeypatch):
    monkeypatch.setattr(manager_module, "RECONNECT_WAIT_SECONDS", 0.05)
    answers = []
    deadline = time.monotonic() + WAIT
    while (
        not manager.wait_connected(crashed.pk, 0) and len(answers) <= FAILURE_THRESHOLD and time.monotonic() < deadline
    ):
        answers.append(manager.call_tool(crashed.pk, "add", {}))
    if len(answers) <= FAILURE_THRESHOLD:
        pytest.skip(f"the server came back before enough calls were made during its reconnect: {answers}")
    assert not [a for a in answers if "paused" in a.message], answers
    assert all("reconnecting" in a.message for a in answers), answers

    assert manager.wait_connected(crashed.pk, WAIT)
    assert text(call(mcp("add", "shifty"))) == "add ran"

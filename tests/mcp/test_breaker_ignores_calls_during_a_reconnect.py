"""Calls made while a crashed server reconnects do not open the breaker, and say what is happening."""

import time

import pytest

from registry.mcp.breaker import FAILURE_THRESHOLD
from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import WAIT, entry, mcp, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


def test_calls_during_a_reconnect_are_not_counted_and_name_the_reconnect(manager, call, tmp_path):
    server = shifting_server(tools=[entry("add")], approval_policy="auto")
    server.args = [*server.args, str(tmp_path / "slow")]  # the restarted process takes 3 s to start
    server.save()
    manager.connect(ServerConfig.from_model(server))
    crashed = manager.call_tool(server.pk, "control", {"exit": 3, "slow_restart": True})
    assert crashed.err_kind == "MCPConnectionLost"

    answers = []
    deadline = time.monotonic() + WAIT
    while (
        not manager.wait_connected(server.pk, 0) and len(answers) <= FAILURE_THRESHOLD and time.monotonic() < deadline
    ):
        answers.append(manager.call_tool(server.pk, "add", {}))
    if len(answers) <= FAILURE_THRESHOLD:
        pytest.skip(f"the server came back before enough calls were made during its reconnect: {answers}")
    assert not [a for a in answers if "paused" in a.message], answers
    assert all("reconnecting" in a.message for a in answers), answers

    assert manager.wait_connected(server.pk, WAIT)
    assert text(call(mcp("add", "shifty"))) == "add ran"

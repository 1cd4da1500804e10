"""An MCP server's list_changed seen by another server process reaches this one: it
re-lists the server on its own session at once, as if it had been told itself.

The other process is a real one publishing on the process bus (tests/test_process_bus.py).
Needs REDIS_URL (skipped without it)."""

import pytest

from registry.mcp.config import ServerConfig
from registry.models import ToolDefinition
from registry.signals import MCP_TOOLS_CHANGED
from tests.mcp.conftest import WAIT, entry, mcp, shift, shifting_server
from tests.test_process_bus import REDIS_URL, listening, publish_from_another_process  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not REDIS_URL, reason="the process bus needs REDIS_URL"),
]


def listed(name: str) -> bool:
    return ToolDefinition.objects.live().filter(name=mcp(name, "shifty")).exists()


def test_a_list_change_another_process_saw_is_listed_here_on_this_process_session(manager, listening):  # noqa: F811
    server = shifting_server(tools=[entry("read")], approval_policy="auto")
    manager.connect(ServerConfig.from_model(server))
    shift(manager, server, [entry("read"), entry("write")], notify=0)  # changed; this session was not told
    assert not listed("write")
    before = manager.sync_count(server.pk)

    publish_from_another_process(MCP_TOOLS_CHANGED, server=server.pk)

    assert manager.wait_synced(server.pk, before, WAIT), "this process did not re-list the server"
    assert listed("write")


def test_news_of_a_server_this_process_has_no_session_with_is_ignored(manager, listening):  # noqa: F811
    server = shifting_server(tools=[entry("read")], approval_policy="auto")

    publish_from_another_process(MCP_TOOLS_CHANGED, server=server.pk)

    assert not manager.is_connected(server.pk) and manager.sync_count(server.pk) == 0

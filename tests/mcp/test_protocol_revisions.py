"""Which MCP revision Eunice speaks with a server: the 2025-11-25 handshake with every server
that accepts it (dual-revision ones included), tested against real server processes; the
2026-07-28 path (server/discover, changes on a subscriptions/listen stream, input_required)
is exercised by the official conformance suite (test_conformance_suite.py)."""

import json

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import DEMO, ROGUE, WAIT, add_server, entry, mcp, server_id, shift, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_server_that_speaks_both_revisions_is_spoken_to_with_the_handshake_over_stdio(manager, call):
    manager.connect(ServerConfig.from_model(add_server()))
    assert manager._connections[server_id()].protocol_version == "2025-11-25"
    assert text(call(mcp("add"), a=2, b=3)) == "5"


def test_and_over_streamable_http(manager, http_demo, call):
    web = add_server("web", transport="streamable_http", command="", args=[], url=http_demo, allow_private_network=True)
    manager.connect(ServerConfig.from_model(web))
    assert manager._connections[server_id("web")].protocol_version == "2025-11-25"
    assert text(call(mcp("echo", "web"), text="both")) == "both"


def test_a_server_that_only_knows_the_handshake_is_spoken_to_at_2025_11_25(manager, call):
    server = shifting_server(tools=[entry("lookup", "Look a word up.")], approval_policy="auto")
    manager.connect(ServerConfig.from_model(server))
    assert manager._connections[server.pk].protocol_version == "2025-11-25"
    assert text(call(mcp("lookup", "shifty"))) == "lookup ran"


def test_a_changed_tool_list_announced_by_the_sdk_server_is_seen(manager, call):
    manager.connect(ServerConfig.from_model(add_server()))
    before = manager.sync_count(server_id())
    assert text(call(mcp("grow"))) == "grown"
    assert manager.wait_synced(server_id(), before, WAIT)
    assert text(call(mcp("extra"))) == "extra!"


def test_and_at_2025_11_25_through_the_notification(manager, call):
    server = shifting_server(tools=[entry("first", "The first tool.")], approval_policy="auto")
    manager.connect(ServerConfig.from_model(server))
    shift(manager, server, [entry("first", "The first tool."), entry("second", "Came later.")])
    assert text(call(mcp("second", "shifty"))) == "second ran"


def test_an_answer_that_is_no_tools_call_result_is_a_typed_err_without_a_traceback(manager, call):
    manager.connect(ServerConfig.from_model(add_server("rogue", args=[ROGUE])))
    result = call(mcp("malformed", "rogue"))
    assert result.content.startswith("✗ error (MCPResultInvalid): MCP server 'rogue' answered 'malformed'")
    assert "not a valid tools/call result" in result.content and "Traceback" not in result.content


def test_a_server_that_refuses_the_handshake_is_spoken_to_at_2026_07_28_through_discover(manager, call):
    manager.connect(ServerConfig.from_model(add_server("modern", args=[DEMO, "stdio-modern"])))
    assert manager._connections[server_id("modern")].protocol_version == "2026-07-28"
    assert text(call(mcp("add", "modern"), a=2, b=3)) == "5"


@pytest.mark.parametrize("mode", ["stdio", "stdio-modern"])
def test_eunice_declares_elicitation_in_both_modes_and_sampling_and_no_tasks(manager, call, mode):
    manager.connect(ServerConfig.from_model(add_server(args=[DEMO, mode])))
    declared = json.loads(text(call(mcp("client_capabilities"))))
    assert set(declared["elicitation"]) == {"form", "url"}
    assert "tasks" not in declared and "tasks" not in json.dumps(declared.get("extensions") or {})
    if mode == "stdio":  # sampling is deprecated at 2026-07-28; the SDK leaves it out there
        assert "sampling" in declared

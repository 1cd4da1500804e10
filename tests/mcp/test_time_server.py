"""mcp-server-time, a real third-party server from PyPI, over stdio."""

import json
import sys

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_time_servers_tools_are_callable_through_the_registry(manager, call):
    found = manager.connect(ServerConfig.from_model(add_server("time", args=["-m", "mcp_server_time"])))
    assert found["tool_names"] == [mcp("convert_time", "time"), mcp("get_current_time", "time")]
    answer = json.loads(text(call(mcp("get_current_time", "time"), timezone="Asia/Tokyo")))
    assert answer["timezone"] == "Asia/Tokyo"


def test_a_missing_command_fails_to_connect_saying_so(manager):
    from registry.mcp import MCPError

    with pytest.raises(MCPError, match="the command was not found: /no/such/server"):
        manager.connect(ServerConfig.from_model(add_server("ghost", command="/no/such/server", args=[])))
    assert sys.executable  # the app is still fine

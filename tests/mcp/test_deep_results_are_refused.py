"""An MCP result nested past EUNICE_JSON_MAX_DEPTH is an error naming the limit, at any depth,
and the server and its neighbours keep working."""

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import ROGUE, WAIT, add_server, mcp, server_id

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rogue(manager):
    manager.connect(ServerConfig.from_model(add_server("rogue", args=[ROGUE])))
    manager.connect(ServerConfig.from_model(add_server("other")))


@pytest.mark.parametrize("depth", [65, 150])
def test_deep_structured_content_is_an_error_naming_the_limit(rogue, call, depth):
    result = call(mcp("deep", "rogue"), depth=depth)
    assert result.content.startswith("✗ error (MCPResultTooDeep)") and "EUNICE_JSON_MAX_DEPTH" in result.content
    assert text(call(mcp("add", "other"), a=1, b=2)) == "3"
    assert text(call(mcp("deep", "rogue"), depth=10)) == "deep"


def test_a_result_deeper_than_the_sdk_reads_fails_cleanly_and_the_server_comes_back(rogue, call, manager):
    result = call(mcp("deep", "rogue"), depth=100_000)
    assert result.content.startswith("✗ error") and "RecursionError" not in result.content
    assert text(call(mcp("add", "other"), a=1, b=2)) == "3"
    assert manager.wait_connected(server_id("rogue"), WAIT)
    assert text(call(mcp("deep", "rogue"), depth=10)) == "deep"

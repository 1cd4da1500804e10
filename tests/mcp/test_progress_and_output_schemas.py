"""A server's progress notifications reach the person watching the call, and a result
that breaks the tool's own outputSchema is refused with a typed Err."""

import asyncio

import pytest

from registry.context import ToolContext
from registry.mcp.config import ServerConfig
from tests.conftest import TENANT, text
from tests.mcp.conftest import ROGUE, add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(manager):
    manager.connect(ServerConfig.from_model(add_server()))


def test_each_progress_notification_reaches_the_calls_reporter_with_its_fraction(demo, call):
    reported = []
    watching = {"progress": lambda message, fraction=None: reported.append((message, fraction))}
    result = call(mcp("countdown"), steps=3, context=watching)
    assert text(result) == "counted 3"
    assert reported == [("step 1 of 3", 1 / 3), ("step 2 of 3", 2 / 3), ("step 3 of 3", 1.0)]


def test_a_call_nobody_watches_asks_for_no_progress_and_still_answers(demo, call):
    assert text(call(mcp("countdown"), steps=2)) == "counted 2"


def test_progress_reaches_the_reporter_on_the_coroutine_path_too(demo, registry):
    reported = []
    context = ToolContext(TENANT, "u1", progress=lambda message, fraction=None: reported.append(message))
    result = asyncio.run(registry.aexecute_tool(mcp("countdown"), {"steps": 2}, context))
    assert text(result) == "counted 2" and reported == ["step 1 of 2", "step 2 of 2"]


def test_structured_content_that_breaks_the_declared_output_schema_is_a_typed_err(manager, call):
    manager.connect(ServerConfig.from_model(add_server("rogue", args=[ROGUE])))
    result = call(mcp("liar", server="rogue"))
    assert result.content.startswith(
        "✗ error (MCPResultInvalid): MCP server 'rogue' answered 'liar' with a result that breaks "
        "the tool's own outputSchema"
    )
    assert "'hot' is not of type 'number'" in result.content
    assert "Traceback" not in result.content

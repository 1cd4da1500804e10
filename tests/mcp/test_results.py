"""What the model reads of an MCP tool's content blocks."""

import json

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(manager):
    manager.connect(ServerConfig.from_model(add_server()))


def test_text_content_is_what_the_model_reads_and_costs_nothing(demo, call):
    result = call(mcp("echo"), text="héllo")
    assert text(result) == "héllo" and result.cost == 0.0


def test_an_image_block_becomes_a_card_and_a_line_the_model_can_read(demo, call):
    result = call(mcp("picture"))
    assert "[image: image/png, 12 bytes" in result.content
    assert result.cards[0]["type"] == "image" and result.cards[0]["mime_type"] == "image/png"


def test_structured_content_travels_as_a_card(demo, call):
    result = call(mcp("add"), a=1, b=2)
    assert {"type": "mcp_structured", "data": {"result": "3"}} in result.cards


def test_an_is_error_result_is_an_err_envelope_without_a_traceback(demo, call):
    result = call(mcp("fail"))
    assert result.content.startswith("✗ error (MCPToolError): MCP tool 'fail' on 'demo' reported an error")
    assert "Traceback" not in result.content


def test_megabytes_of_structured_content_never_reach_the_cards(demo, call):
    """A 3 MB structured result: the text is capped, and so are the cards stored with the answer."""
    result = call(mcp("echo"), text="x" * 3_000_000)
    assert sum(len(json.dumps(card)) for card in result.cards) <= 1024 * 1024
    assert not any(card["type"] == "mcp_structured" for card in result.cards)
    assert "⚠ size: 1 card(s) left out of what the user sees: mcp_structured (3,000,0" in result.content
    assert len(result.content) < 250_000


def test_any_tools_cards_are_held_to_the_same_budget(make_tool, call):
    from registry.contract import Effects, Ok

    def charts(inputs, context):
        small = {"type": "chart", "spec": {"mark": "bar"}}
        return Ok(rows=1, data="two charts", effects=Effects(cards=[small, {"type": "chart", "svg": "<" * 2_000_000}]))

    make_tool("two_charts", charts)
    result = call("two_charts")
    assert result.cards == [{"type": "chart", "spec": {"mark": "bar"}}]
    assert "⚠ size: 1 card(s) left out of what the user sees: chart (2,000,0" in result.content

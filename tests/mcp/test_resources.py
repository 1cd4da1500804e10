"""The model reads what a connected MCP server offers as resources, through read_mcp_resource."""

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.mcp.conftest import DEMO, WAIT, add_server, mcp
from tests.test_background_jobs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(manager):
    manager.connect(ServerConfig.from_model(add_server()))


def test_without_a_uri_the_servers_resources_and_templates_are_listed(demo, call):
    listing = text(call("read_mcp_resource", server="demo"))
    assert "MCP server 'demo' offers 2 resource(s)" in listing
    assert "- demo://readme: Read me (text/plain) — What the demo server is." in listing
    assert "- demo://logo: logo (image/png)" in listing
    assert "- demo://notes/{topic}: notes — A note on a topic." in listing


def test_a_text_resource_is_read_whole(demo, call):
    result = call("read_mcp_resource", server="demo", uri="demo://readme")
    assert text(result) == "[resource demo://readme (text/plain)]\nThe demo server answers the tests."


def test_a_filled_in_template_reads_like_any_resource(demo, call):
    assert text(call("read_mcp_resource", server="demo", uri="demo://notes/tides")).endswith("Notes on tides.")


def test_an_image_resource_is_shown_to_the_person_and_named_to_the_model(demo, call):
    result = call("read_mcp_resource", server="demo", uri="demo://logo")
    assert "[image resource demo://logo: image/png, 12 bytes — shown to the user]" in result.content
    assert result.cards[0]["type"] == "image" and result.cards[0]["mime_type"] == "image/png"


def test_an_unknown_uri_is_an_err_saying_the_server_refused(demo, call):
    result = call("read_mcp_resource", server="demo", uri="demo://nothing")
    assert result.content.startswith("✗ error (MCPResourceError): could not read resources of 'demo'")
    assert "Traceback" not in result.content


def test_a_misspelt_server_gets_a_hint_with_the_tenants_servers(demo, call):
    result = call("read_mcp_resource", server="dmeo")
    assert "no enabled MCP server called 'dmeo'" in result.content and "demo" in result.content


def test_another_tenants_server_cannot_be_read(demo, call):
    result = call("read_mcp_resource", tenant="someone-else", server="demo", uri="demo://readme")
    assert "no enabled MCP server called 'demo'" in result.content
    assert "answers the tests" not in result.content


def test_a_resource_link_in_a_tool_result_says_how_to_follow_it_and_following_it_reads_it(demo, call):
    line = text(call(mcp("find_note"), topic="tides"))
    assert line == (
        "[resource link demo://notes/tides: notes on tides; read it with "
        "read_mcp_resource(server='demo', uri='demo://notes/tides')]"
    )
    assert text(call("read_mcp_resource", server="demo", uri="demo://notes/tides")).endswith("Notes on tides.")


@pytest.mark.parametrize("mode", ["stdio", "stdio-modern"])
def test_a_watched_resource_that_changes_is_named_in_the_next_listing_until_it_is_read(manager, call, mode):
    manager.connect(ServerConfig.from_model(add_server(args=[DEMO, mode])))
    read = call("read_mcp_resource", server="demo", uri="demo://notes/tides", watch=True)
    assert "watching demo://notes/tides" in read.content
    assert text(call(mcp("touch"), topic="tides")) == "touched demo://notes/tides"
    changed = "Changed since you last read it (watched): demo://notes/tides"
    assert wait_for(lambda: changed in text(call("read_mcp_resource", server="demo")), WAIT)
    call("read_mcp_resource", server="demo", uri="demo://notes/tides")
    assert changed not in text(call("read_mcp_resource", server="demo"))


def test_a_change_to_a_resource_nobody_watches_is_not_listed(demo, call):
    call(mcp("touch"), topic="tides")
    assert "Changed since" not in text(call("read_mcp_resource", server="demo"))

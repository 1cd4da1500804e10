"""The marketplace: a registry search (a local HTTP server here), the bundled catalog, chat tools."""

import pytest

from tests.mcp.conftest import approve, mcp
from django.contrib.auth import get_user_model

from registry.models import MCPServer
from tests.conftest import text

pytestmark = pytest.mark.django_db(transaction=True)


def install(registry, user_id="u1", **inputs):
    return registry.execute_tool("install_mcp_server", inputs, {"tenant_id": "acme", "user_id": user_id})

def test_search_finds_registry_servers_with_their_launch_command(registry_url, call):
    result = call("search_mcp_marketplace", query="weather")
    assert "id=io.example/weather (registry): Weather forecasts." in result.content
    assert "runs: uvx example-weather-mcp" in result.content


def test_an_unreachable_registry_is_named_and_the_bundled_catalog_still_answers(settings, call):
    settings.MCP_REGISTRY_URL = "http://127.0.0.1:9"
    result = call("search_mcp_marketplace", query="time")
    assert "id=time (bundled)" in result.content
    assert "the MCP registry at http://127.0.0.1:9 is unreachable" in result.content


def test_installing_needs_a_staff_member(registry):
    result = install(registry, id="time", name="time", confirm=True)
    assert result.content == "✗ error (PermissionDenied): installing an MCP server needs a staff member"
    assert not MCPServer.objects.exists()


def test_install_shows_the_exact_command_before_it_runs(registry, registry_url):
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    result = install(registry, staff.pk, id="time", name="time")
    assert "This would run: " in result.content and "-m mcp_server_time" in result.content
    assert not MCPServer.objects.exists()


def test_staff_install_creates_connects_and_the_approved_tools_work(registry, call, manager):
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    result = install(registry, staff.pk, id="time", name="time", confirm=True)
    assert "Installed time" in result.content
    assert "unknown tool" in call(mcp("get_current_time", "time"), timezone="Asia/Tokyo").content  # pending
    approve(mcp("get_current_time", "time"))
    assert "Asia/Tokyo" in text(call(mcp("get_current_time", "time"), timezone="Asia/Tokyo"))

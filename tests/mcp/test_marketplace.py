"""The marketplace: a registry search (a local HTTP server here), the bundled catalog, chat tools."""

import sys

import pytest
from django.contrib.auth import get_user_model

from registry.context import ToolContext
from registry.mcp import marketplace
from registry.models import MCPServer, PendingApproval

pytestmark = pytest.mark.django_db(transaction=True)


def install(registry, user_id="u1", **inputs):
    return registry.execute_tool("install_mcp_server", inputs, ToolContext(tenant_id="acme", user_id=user_id))


def test_search_finds_registry_servers_with_their_launch_command(registry_url, call):
    result = call("search_mcp_marketplace", query="weather")
    assert "id=io.example/weather (registry): Weather forecasts." in result.content
    assert "runs: uvx example-weather-mcp@1.4.2" in result.content


def test_an_unreachable_registry_is_named_and_the_bundled_catalog_still_answers(settings, call):
    settings.MCP_REGISTRY_URL = "http://127.0.0.1:9"
    result = call("search_mcp_marketplace", query="time")
    assert "id=time (bundled)" in result.content
    assert "the MCP registry at http://127.0.0.1:9 is unreachable" in result.content


def test_installing_needs_a_staff_member(registry):
    result = install(registry, id="time", name="time")
    assert result.content == "✗ error (PermissionDenied): installing an MCP server needs a staff member"
    assert not MCPServer.objects.exists()


def test_search_says_which_listings_can_run_here_and_offers_those_first(registry_url, call, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no uvx, no npx: a fresh machine
    result = call("search_mcp_marketplace", query="e", limit=20)
    lines = [line for line in result.content.splitlines() if "runs:" in line]
    assert "-m mcp_server_time (can run here)" in lines[0]
    assert "runs: uvx mcp-server-fetch (cannot run here: 'uvx' is not on PATH here (uvx comes with uv" in result.content
    assert "(cannot run here: 'npx' is not on PATH here (npx comes with Node.js" in result.content


def test_a_listing_whose_python_package_is_missing_names_the_package():
    listing = marketplace.Listing(
        "x", "X", "", command=[sys.executable, "-m", "no_such_module_here"], package="no-such-package"
    )
    assert listing.missing() == "the Python package no-such-package is not installed here (pip install no-such-package)"


def test_installing_what_cannot_run_here_says_what_is_missing_and_asks_nobody(registry, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    staff = get_user_model().objects.create_user("sam", is_staff=True)
    result = install(registry, staff.pk, id="fetch", name="fetch")
    assert result.content.startswith("✗ error (Unavailable): 'fetch' cannot run on this server: 'uvx' is not on PATH")
    assert not PendingApproval.objects.exists()


def test_a_registry_listing_is_pinned_to_the_version_the_registry_names(registry_url):
    listing = marketplace.find("io.example/weather")
    assert listing.command == ["uvx", "example-weather-mcp@1.4.2"]
    assert listing.shown("weather")["version"] == "1.4.2"
    assert listing.shown("weather")["package"] == "example-weather-mcp"

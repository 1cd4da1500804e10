"""The MCP endpoint owns every path under /mcp/ before Django sees the request
(``MCPMount`` in eunice/asgi.py): a page routed there would be unreachable in a real
server while the test client, which skips the mount, still reaches it. The MCP client's
OAuth pages (Connect, the callback, the client metadata document) once were."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from mcpserver.endpoint import MCPMount


def routes(patterns, prefix: str = "") -> list[str]:
    found = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            found.append(route)
    return found


def test_no_django_route_lies_under_the_endpoints_prefix():
    every = routes(get_resolver().url_patterns)
    assert len(every) > 50  # the walk found the site's routes
    shadowed = [route for route in every if route.lstrip("^/") == "mcp" or route.lstrip("^").startswith("mcp/")]
    assert shadowed == []


@pytest.mark.asyncio
async def test_the_mount_hands_every_other_path_to_django():
    seen = []

    async def django(scope, receive, send):
        seen.append(scope["path"])

    async def endpoint(scope, receive, send):
        seen.append("endpoint")

    mount = MCPMount(django, endpoint)
    for path in ("/mcp-oauth/callback/", "/mcpx", "/api/mcp/prompts/", "/mcp", "/mcp/writing/"):
        await mount({"type": "http", "path": path}, None, None)
    assert seen == ["/mcp-oauth/callback/", "/mcpx", "/api/mcp/prompts/", "endpoint", "endpoint"]

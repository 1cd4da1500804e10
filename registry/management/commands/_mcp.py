"""Shared by the mcp_* commands."""

from django.core.management.base import CommandError

from registry.models import MCPServer


def server_named(name: str) -> MCPServer:
    server = MCPServer.objects.filter(name=name).first()
    if server is None:
        raise CommandError(f"no MCP server named {name!r}; see manage.py mcp_list")
    return server

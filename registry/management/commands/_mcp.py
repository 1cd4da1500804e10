"""Shared by the mcp_* commands."""

from django.core.management.base import CommandError

from registry.models import MCPServer


def server_named(name: str) -> MCPServer:
    """The one server of that name. Names are unique per tenant, so the name
    may also be written ``TENANT/NAME``. Raises CommandError when none or
    several match."""
    tenant, _, bare = name.rpartition("/")
    servers = MCPServer.objects.filter(name=bare, **({"tenant_id": tenant} if tenant else {}))
    found = list(servers[:2])
    if not found:
        raise CommandError(f"no MCP server named {name!r}; see manage.py mcp_list")
    if len(found) > 1:
        raise CommandError(f"several tenants have an MCP server named {bare!r}; write it TENANT/{bare}")
    return found[0]

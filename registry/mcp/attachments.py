"""MCP resources a person attaches to a message in the chat page: the resources of the
tenant's enabled servers, and one read as the text that goes into the message.

Reading a resource runs nothing (as for ``read_mcp_resource``), so any user of the tenant
may; another tenant's servers are not there. The attachment is text in the person's own
message, so the model reads it as what they sent, and the conversation keeps it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from registry.mcp.prompts import connected, each_server

RESOURCE_LIMIT = 200  # per server


def offered(tenant_id: str) -> tuple[list[dict], dict[str, str]]:
    """The resources of the tenant's enabled servers (``server``, ``uri``, ``name``,
    ``title``, ``mime_type``, ``description``), and the servers that could not be asked."""
    answered, failed = each_server(tenant_id, lambda manager, pk: manager.resources(pk, RESOURCE_LIMIT)[0])
    return [_entry(server, resource) for server, resources in answered for resource in resources], failed


def _entry(server: str, resource: Any) -> dict:
    return {
        "server": server,
        "uri": str(resource.uri),
        "name": resource.name,
        "title": resource.title or "",
        "mime_type": resource.mime_type or "",
        "description": resource.description or "",
    }


def attachment(tenant_id: str, server: str, uri: str) -> str:
    """The resource as the text attached to a message: each text content whole (up to the
    cap), a binary one named with its type and size. Raises prompts.RequestError for a
    server the tenant has not, MCPError when the server fails or refuses the URI."""
    row, manager = connected(tenant_id, server)
    result = manager.read_resource(row.pk, uri)
    parts = []
    for contents in result.contents or []:
        where = str(getattr(contents, "uri", "") or uri)
        mime = getattr(contents, "mime_type", None) or "unknown type"
        text = getattr(contents, "text", None)
        if text is None:
            size = len(getattr(contents, "blob", "") or "") * 3 // 4
            parts.append(f"[binary resource {where}: {mime}, about {size} bytes, not attached]")
        else:
            parts.append(f"[attached resource {where} from {row.name} ({mime})]\n{text}\n[end of {where}]")
    text = "\n\n".join(parts) or f"[resource {uri} from {row.name} is empty]"
    cap = settings.EUNICE_MAX_MESSAGE_CHARS // 2  # room left in the message for the person's own words
    if len(text) > cap:
        text = text[:cap] + f"\n[… {len(text) - cap} more characters not attached]"
    return text

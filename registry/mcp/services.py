"""State changes to MCP servers: one small function each, keyword-only acting_user, audited.

The admin, the REST API, the CLI and the chat tools only call these. Rules
enforced here, whoever calls: only staff may create a stdio server or change
its command, args or env, or allow a private URL; a URL is SSRF-checked
before it is stored. Connecting talks to the network, so it is not wrapped in
the database transaction; its audit row is written after, in one of its own.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.manager import get_manager
from registry.mcp.urls import UnsafeURL, check_url
from registry.models import MCPAuditLog, MCPServer, MCPTransport, ToolDefinition, ToolStatus

EDITABLE = (
    "transport", "command", "args", "env", "url", "headers", "allow_private_network", "enabled",
    "approval_policy", "call_timeout_seconds", "idempotent_tools",
)


class Actor(Protocol):
    is_staff: bool

    def get_username(self) -> str: ...


@dataclass(frozen=True)
class Operator:
    """Someone at the server's console (the CLI): trusted like staff."""

    username: str = "cli"
    is_staff: bool = True

    def get_username(self) -> str:
        return self.username


@transaction.atomic
def create_server(*, acting_user: Actor, tenant_id: str, name: str, **fields: Any) -> MCPServer:
    """Store a new server. Raises PermissionDenied or ValidationError saying why not."""
    server = MCPServer(name=name, tenant_id=tenant_id)
    _apply(server, fields, acting_user, creating=True)
    _audit("create", server, acting_user, {"fields": sorted(fields)})
    return server


@transaction.atomic
def update_server(server: MCPServer, *, acting_user: Actor, **changes: Any) -> MCPServer:
    _apply(server, changes, acting_user, creating=False)
    _audit("update", server, acting_user, {"fields": sorted(changes)})
    return server


def check_server(server: MCPServer | None, *, acting_user: Actor, tenant_id: str, name: str, **fields: Any) -> None:
    """The rules ``create_server`` (``server`` None) or ``update_server`` enforce,
    checked on a copy and saving nothing: a form can show them as its errors.
    Raises PermissionDenied or ValidationError as they do."""
    probe = MCPServer(name=name, tenant_id=tenant_id) if server is None else copy.copy(server)
    _apply(probe, fields, acting_user, creating=server is None, save=False)


def delete_server(server: MCPServer, *, acting_user: Actor) -> None:
    get_manager().disconnect(server.name)
    with transaction.atomic():
        _audit("delete", server, acting_user, {})
        server.delete()


def connect_server(server: MCPServer, *, acting_user: Actor) -> dict:
    """Connect and register the tools. Raises MCPError saying why it failed (also audited)."""
    try:
        found = get_manager().connect(ServerConfig.from_model(server))
    except MCPError as exc:
        _audit_now("connect_failed", server, acting_user, {"error": str(exc)})
        raise
    _audit_now("connect", server, acting_user, {"tools": found["tool_names"]})
    return found


def disconnect_server(server: MCPServer, *, acting_user: Actor) -> int:
    retired = get_manager().disconnect(server.name)
    _audit_now("disconnect", server, acting_user, {"retired": retired})
    return retired


def refresh_server(server: MCPServer, *, acting_user: Actor) -> dict:
    """Reconnect: the tool list may have changed. Raises MCPError saying why it failed."""
    found = get_manager().reconnect(ServerConfig.from_model(server))
    _audit_now("refresh", server, acting_user, {"tools": found["tool_names"]})
    return found


@transaction.atomic
def approve_tool(row: ToolDefinition, *, acting_user: Actor) -> ToolDefinition:
    """Approve a quarantined, pending or flagged MCP tool as it is defined now (staff only)."""
    if not acting_user.is_staff:
        raise PermissionDenied("only staff may approve MCP tools")
    server = MCPServer.objects.select_for_update().get(name=row.implementation.split(":")[1])
    remote = row.test_results.get("remote") or {}
    from registry.mcp.naming import RemoteTool

    tool = RemoteTool(remote["name"], remote["description"], remote["input_schema"], remote["annotations"])
    server.approved_tools = {**server.approved_tools, tool.name: {"hash": tool.hash, "definition": tool.definition}}
    server.save(update_fields=["approved_tools", "updated_at"])
    row.status, row.status_message = ToolStatus.APPROVED, ""
    row.save(update_fields=["status", "status_message"])
    transaction.on_commit(lambda: get_manager().ensure_connected(server.name))
    _audit("approve_tool", server, acting_user, {"tool": tool.name, "hash": tool.hash})
    return row


def _apply(server: MCPServer, fields: dict, actor: Actor, *, creating: bool, save: bool = True) -> None:
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ValidationError(f"unknown fields: {sorted(unknown)}")
    if not actor.is_staff:
        _check_non_staff_change(server, fields, creating=creating)
    for key, value in fields.items():
        setattr(server, key, value)
    if server.transport == MCPTransport.STREAMABLE_HTTP:
        try:
            check_url(server.url, allow_private=ServerConfig.from_model(server).allow_private)
        except UnsafeURL as exc:
            raise ValidationError({"url": str(exc)}) from None
    elif not server.command:
        raise ValidationError({"command": "a stdio server needs a command"})
    server.full_clean()
    if save:
        server.save()


def _check_non_staff_change(server: MCPServer, fields: dict, *, creating: bool) -> None:
    """What only staff may do, judged on the server as it would be after the change:
    anything that defines a process to start (a stdio server; its command, args,
    env, on any transport, since a later switch to stdio would start them), and
    reaching private addresses. Raises PermissionDenied naming the rule."""
    changed = {key for key, value in fields.items() if value != getattr(server, key, None)}
    transport = fields.get("transport", server.transport)
    if transport == MCPTransport.STDIO and (creating or "transport" in changed):
        raise PermissionDenied("only staff may create a stdio server or switch a server to stdio")
    process = sorted(changed & {"command", "args", "env"})
    if process:
        raise PermissionDenied(f"only staff may set {', '.join(process)}: they define a process to start")
    if "allow_private_network" in changed:
        raise PermissionDenied("only staff may let a server reach private addresses")
    if "url" in changed and fields.get("allow_private_network", server.allow_private_network):
        raise PermissionDenied("this server may reach private addresses; only staff may change its url")


def _audit(action: str, server: MCPServer, actor: Actor, details: dict) -> None:
    MCPAuditLog.objects.create(
        action=action, server_name=server.name, tenant_id=server.tenant_id,
        actor=actor.get_username(), details=details,
    )


def _audit_now(action: str, server: MCPServer, actor: Actor, details: dict) -> None:
    with transaction.atomic():
        _audit(action, server, actor, details)

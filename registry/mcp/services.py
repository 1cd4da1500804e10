"""State changes to MCP servers: one small function each, keyword-only acting_user, audited.

The admin, the REST API, the CLI and the chat tools only call these. Rules
enforced here, whoever calls, judged on the server as it would be after the
change (docs/mcp.md has the table):

- only staff may create a stdio server or change its command, args or env,
  or allow a private URL; a URL is SSRF-checked before it is stored;
- only staff holding the approve permission may set a server's approval
  policy (``auto`` approves every tool it will ever list) or approve a tool;
- only staff may change, disable, delete, connect, disconnect or refresh a
  server staff created.

Connecting talks to the network, so it is not wrapped in the database
transaction; its audit row is written after, in one of its own.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.inventory import server_of
from registry.mcp.manager import get_manager
from registry.mcp.naming import definition_hash
from registry.mcp.transports import TRANSPORTS, MissingEndpoint
from registry.mcp.urls import PrivateAddress, UnresolvableHost, UnsafeURL
from registry.models import (
    MCP_APPROVE_PERMISSION,
    ApprovalPolicy,
    MCPAuditLog,
    MCPServer,
    ToolDefinition,
    ToolStatus,
)

EDITABLE = (
    "transport",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "allow_private_network",
    "enabled",
    "approval_policy",
    "call_timeout_seconds",
    "idempotent_tools",
    "authorization",
    "oauth_client",
)
CHANGED_SINCE_SHOWN = "{tool!r} changed since you opened this page; review it again"


class StaleApproval(ValidationError):
    """What staff approved is not what the server reports now."""


class Actor(Protocol):
    @property
    def is_staff(self) -> bool: ...  # read-only, so a frozen Operator is an Actor too

    def get_username(self) -> str: ...

    def has_perm(self, perm: str, obj: Any = None) -> bool: ...


@dataclass(frozen=True)
class Operator:
    """Someone at the server's console (the CLI): trusted like staff with every permission."""

    username: str = "cli"
    is_staff: bool = True
    pk: None = None

    def get_username(self) -> str:
        return self.username

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        return True


@transaction.atomic
def create_server(*, acting_user: Actor, tenant_id: str, name: str, **fields: Any) -> MCPServer:
    """Store a new server. Raises PermissionDenied or ValidationError saying why not."""
    if MCPServer.objects.filter(tenant_id=tenant_id, name=name).exists():
        raise ValidationError({"name": f"this tenant already has an MCP server named {name!r}"})
    server = MCPServer(
        name=name,
        tenant_id=tenant_id,
        staff_owned=acting_user.is_staff,
        created_by_id=getattr(acting_user, "pk", None),
    )
    _apply(server, fields, acting_user, creating=True)
    _audit("create", server, acting_user, {"fields": sorted(fields)})
    return server


@transaction.atomic
def update_server(server: MCPServer, *, acting_user: Actor, **changes: Any) -> MCPServer:
    """Change a server. Disabling it disconnects it and retires its tools (after commit).
    Raises PermissionDenied or ValidationError saying why not."""
    was_enabled = server.enabled
    _apply(server, changes, acting_user, creating=False)
    _audit("update", server, acting_user, {"fields": sorted(changes)})
    if was_enabled and not server.enabled:
        server_id = server.pk
        transaction.on_commit(lambda: get_manager().disconnect(server_id))
    return server


def check_server(server: MCPServer | None, *, acting_user: Actor, tenant_id: str, name: str, **fields: Any) -> None:
    """The rules ``create_server`` (``server`` None) or ``update_server`` enforce,
    checked on a copy and saving nothing: a form can show them as its errors.
    Raises PermissionDenied or ValidationError as they do."""
    probe = MCPServer(name=name, tenant_id=tenant_id) if server is None else copy.copy(server)
    _apply(probe, fields, acting_user, creating=server is None, save=False)


def delete_server(server: MCPServer, *, acting_user: Actor) -> None:
    """Raises PermissionDenied when a plain user tries it on a staff server."""
    _check_staff_server(server, acting_user, "delete")
    get_manager().disconnect(server.pk)
    with transaction.atomic():
        _audit("delete", server, acting_user, {})
        server.delete()


def connect_server(server: MCPServer, *, acting_user: Actor) -> dict:
    """Connect and register the tools. Raises PermissionDenied, or MCPError saying why it failed (also audited)."""
    _check_staff_server(server, acting_user, "connect")
    if not server.enabled:
        raise MCPError(f"MCP server {server.name!r} is disabled; enable it first")
    try:
        found = get_manager().connect(ServerConfig.from_model(server))
    except MCPError as exc:
        _audit_now("connect_failed", server, acting_user, {"error": str(exc)})
        raise
    _audit_now("connect", server, acting_user, {"tools": found["tool_names"]})
    return found


def disconnect_server(server: MCPServer, *, acting_user: Actor) -> int:
    """Raises PermissionDenied when a plain user tries it on a staff server."""
    _check_staff_server(server, acting_user, "disconnect")
    retired = get_manager().disconnect(server.pk)
    _audit_now("disconnect", server, acting_user, {"retired": retired})
    return retired


def refresh_server(server: MCPServer, *, acting_user: Actor) -> dict:
    """Reconnect: the tool list may have changed. Raises PermissionDenied, or MCPError saying why it failed."""
    _check_staff_server(server, acting_user, "refresh")
    if not server.enabled:
        raise MCPError(f"MCP server {server.name!r} is disabled; enable it first")
    found = get_manager().reconnect(ServerConfig.from_model(server))
    _audit_now("refresh", server, acting_user, {"tools": found["tool_names"]})
    return found


def approve_tool(row: ToolDefinition, *, acting_user: Actor, shown_hash: str) -> ToolDefinition:
    """Approve a held MCP tool exactly as the reviewer saw it.

    ``shown_hash`` is the definition_hash of the tools/list entry the page
    showed. The approval is recorded on the server row for that hash only.
    Raises PermissionDenied without the approve permission, ValidationError
    for a tool that cannot run here, and StaleApproval when the stored entry
    or the one the connected server reports now differs from what was shown.
    """
    if not (acting_user.is_staff and acting_user.has_perm(MCP_APPROVE_PERMISSION)):
        raise PermissionDenied("approving MCP tools needs the permission registry.approve_mcp_tool")
    remote = (row.test_results or {}).get("remote") or {}
    tool = str(remote.get("name", ""))
    if row.status_message.startswith("unsupported"):
        raise ValidationError(f"{tool!r} cannot run here: {row.status_message.split(': ', 1)[-1]}")
    server_id = server_of(row)
    # Asked outside the transaction: the server is a network peer. The check after it, on the
    # locked rows, binds the approval to the hash; a change in between only quarantines it again.
    live = get_manager().live_definition(server_id, tool) if server_id is not None else None
    if live is not None and definition_hash(live) != shown_hash:
        raise StaleApproval(CHANGED_SINCE_SHOWN.format(tool=tool))
    return _record_approval(row.pk, server_id, tool, shown_hash, acting_user)


@transaction.atomic
def _record_approval(row_pk: int, server_id: int | None, tool: str, shown_hash: str, actor: Actor) -> ToolDefinition:
    server = MCPServer.objects.select_for_update().filter(pk=server_id).first()
    row = ToolDefinition.objects.select_for_update().filter(pk=row_pk, deleted_at__isnull=True).first()
    if server is None or row is None or row.tenant_id != server.tenant_id:
        raise ValidationError("this tool or its MCP server no longer exists")
    remote = (row.test_results or {}).get("remote") or {}
    if definition_hash(remote) != shown_hash:
        raise StaleApproval(CHANGED_SINCE_SHOWN.format(tool=tool))
    server.approved_tools = {**server.approved_tools, tool: {"hash": shown_hash, "definition": remote}}
    server.save(update_fields=["approved_tools", "updated_at"])
    row.status, row.status_message = ToolStatus.APPROVED, ""
    row.save(update_fields=["status", "status_message"])
    if server.enabled:
        transaction.on_commit(lambda: get_manager().ensure_connected(server.pk))
    _audit("approve_tool", server, actor, {"tool": tool, "hash": shown_hash})
    return row


def _apply(server: MCPServer, fields: dict, actor: Actor, *, creating: bool, save: bool = True) -> None:
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ValidationError(f"unknown fields: {sorted(unknown)}")
    if not actor.is_staff:
        _check_non_staff_change(server, fields, creating=creating)
    _check_policy_change(server, fields, actor)
    for key, value in fields.items():
        setattr(server, key, value)
    _check_endpoint(server)
    # The per-tenant name is checked above, without a leak; every other constraint here,
    # so input the database would refuse is a ValidationError, never an IntegrityError.
    server.full_clean(validate_constraints=False)
    server.validate_constraints(exclude={"name"})
    if save:
        server.save()


def _check_endpoint(server: MCPServer) -> None:
    """What the server's transport needs to reach it, and only addresses it may reach.
    An unknown transport is left to full_clean, which names the valid choices."""
    transport = TRANSPORTS.get(server.transport)
    if transport is None:
        return
    try:
        transport.check(ServerConfig.endpoint_of(server))
    except UnsafeURL as exc:
        raise ValidationError({"url": ValidationError(str(exc), code=url_error_code(exc))}) from None
    except MissingEndpoint as exc:
        raise ValidationError({exc.field: f"a {server.transport} server needs a {exc.field}"}) from None


# The code a refused url's ValidationError carries: the API answers a well-formed URL whose
# host is private 403 and one whose host does not resolve 422, and any other refusal 400.
URL_PRIVATE, URL_UNRESOLVABLE, URL_INVALID = "private_address", "unresolvable_host", "invalid"


def url_error_code(exc: UnsafeURL) -> str:
    if isinstance(exc, PrivateAddress):
        return URL_PRIVATE
    return URL_UNRESOLVABLE if isinstance(exc, UnresolvableHost) else URL_INVALID


def _check_policy_change(server: MCPServer, fields: dict, actor: Actor) -> None:
    """The approval policy decides whether staff review new tools at all: setting it
    is reviewing. Raises PermissionDenied naming the rule."""
    policy = fields.get("approval_policy", server.approval_policy)
    changed = "approval_policy" in fields and (server.pk is None or policy != server.approval_policy)
    if server.pk is None and policy == ApprovalPolicy.MANUAL:
        return  # a new server under review needs nobody's say
    if changed and not (actor.is_staff and actor.has_perm(MCP_APPROVE_PERMISSION)):
        raise PermissionDenied(
            "only staff with the permission registry.approve_mcp_tool may set a server's approval_policy"
        )


def _check_staff_server(server: MCPServer, actor: Actor, verb: str) -> None:
    if server.staff_owned and not actor.is_staff:
        raise PermissionDenied(f"only staff may {verb} an MCP server staff created")


def _check_non_staff_change(server: MCPServer, fields: dict, *, creating: bool) -> None:
    """What only staff may do, judged on the server as it would be after the change:
    anything that defines a process to start (a stdio server; its command, args,
    env, on any transport, since a later switch to stdio would start them),
    reaching private addresses, and any change to a server staff created (its
    url or headers would redirect calls to staff-approved tools, disabling it
    would switch them off). Raises PermissionDenied naming the rule."""
    changed = {key for key, value in fields.items() if value != getattr(server, key, None)}
    if not creating and server.staff_owned and changed:
        raise PermissionDenied("only staff may change or disable an MCP server staff created")
    transport = TRANSPORTS.get(fields.get("transport", server.transport))
    if transport is not None and transport.starts_process and (creating or "transport" in changed):
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
        action=action,
        server_name=server.name,
        tenant_id=server.tenant_id,
        actor=actor.get_username(),
        details=details,
    )


def _audit_now(action: str, server: MCPServer, actor: Actor, details: dict) -> None:
    with transaction.atomic():
        _audit(action, server, actor, details)

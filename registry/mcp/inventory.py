"""A server's tool list → tool_definitions rows, with approval and quarantine.

A tool is *active* (approved) when the hash of its whole tools/list entry
matches what was approved for it on this server row. One whose entry changed
since is *quarantined*; one never approved follows the server's approval
policy: under ``manual`` it is *pending* whenever it appears (first connect,
list_changed, reconnect), under ``auto`` it is approved as it is. A
description with hidden characters or over the cap is *flagged*; a tool that
needs a client feature Eunice lacks is *unsupported* (never offered, and not
approvable). Held tools are rows in status ``testing``: never offered, never
callable, until staff approve them (registry.mcp.services.approve_tool).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.naming import (
    NameCollision,
    RemoteTool,
    describe,
    description_flags,
    implementation,
    names_for,
)
from registry.models import (
    MCP_CREATED_BY_PREFIX,
    ApprovalPolicy,
    MCPServer,
    MCPStatus,
    ToolDefinition,
    ToolStatus,
    ToolType,
)

QUARANTINED = "quarantined: its definition changed since it was approved"
PENDING = "pending: a new tool waiting for staff approval"
FLAGGED = "flagged: its description "
UNSUPPORTED = "unsupported: "


@dataclass
class Inventory:
    active: dict[str, str] = field(default_factory=dict)  # registered name -> server tool name
    held: dict[str, str] = field(default_factory=dict)  # registered name -> why


def tool_state(row: ToolDefinition) -> str:
    """active, quarantined, pending, flagged or unsupported: what the API and admin show."""
    if row.status == ToolStatus.APPROVED:
        return "active"
    return row.status_message.split(":", 1)[0] or "pending"


def server_of(row: ToolDefinition) -> int | None:
    """The id of the server row an MCP tool row belongs to (None for another tool)."""
    tag = row.created_by.removeprefix(MCP_CREATED_BY_PREFIX)
    return int(tag) if row.tool_type == ToolType.MCP and tag.isdigit() else None


@transaction.atomic
def sync(config: ServerConfig, tools: list[RemoteTool]) -> Inventory:
    """Upsert the server's rows, soft-delete the ones it no longer offers.

    Raises MCPError when the server was deleted or disabled meanwhile, and
    NameCollision when a name is taken by a live tool of something else.
    """
    server = MCPServer.objects.select_for_update().filter(pk=config.id).first()
    if server is None or not server.enabled:
        raise MCPError(f"MCP server {config.name!r} was deleted or disabled")
    mapping = names_for(server.tenant_id, server.name, [tool.name for tool in tools])
    owner = server.created_by_tag
    existing = {row.name: row for row in ToolDefinition.objects.filter(name__in=mapping.values())}
    clash = [name for name, row in existing.items() if row.created_by != owner and _still_held(row)]
    if clash:
        raise NameCollision(f"tool name {clash[0]!r} already belongs to another tool of this tenant")
    inventory = Inventory()
    approved = dict(server.approved_tools)
    for tool in tools:
        name = mapping[tool.name]
        why_held = _why_held(tool, approved.get(tool.name), server.approval_policy)
        if why_held is None:
            approved[tool.name] = {"hash": tool.hash, "definition": tool.definition}
            inventory.active[name] = tool.name
        else:
            inventory.held[name] = why_held
        _upsert(existing.get(name), name, tool, server, why_held)
    ToolDefinition.objects.filter(created_by=owner, deleted_at__isnull=True).exclude(name__in=mapping.values()).update(
        deleted_at=timezone.now(), updated_at=timezone.now()
    )
    server.approved_tools = approved
    server.save(update_fields=["approved_tools", "updated_at"])
    return inventory


def _still_held(row: ToolDefinition) -> bool:
    """Whether a row with a name we want still belongs to something: any live row,
    or a retired one of a server that still exists. A deleted server's rows are
    free to take (with none of its approvals: those lived on its row)."""
    if row.deleted_at is None:
        return True
    server_id = server_of(row)
    return server_id is None or MCPServer.objects.filter(pk=server_id).exists()


def _why_held(tool: RemoteTool, approved: dict | None, policy: str) -> str | None:
    if tool.unsupported:
        return UNSUPPORTED + tool.unsupported
    if approved is not None:
        return None if approved["hash"] == tool.hash else QUARANTINED
    flags = description_flags(tool.description)
    if flags:
        return FLAGGED + " and ".join(flags)
    return None if policy == ApprovalPolicy.AUTO else PENDING


def _upsert(row: ToolDefinition | None, name: str, tool: RemoteTool, server: MCPServer, held: str | None) -> None:
    row = row or ToolDefinition(name=name)
    row.description = describe(server.name, tool.description)
    row.input_schema = tool.input_schema
    row.implementation = implementation(server.pk, tool.name)
    row.tool_type = ToolType.MCP
    row.status = ToolStatus.TESTING if held else ToolStatus.APPROVED
    row.status_message = (held or "")[:200]
    row.category = "mcp"
    row.tenant_id = server.tenant_id
    row.created_by = server.created_by_tag
    row.enabled = True
    row.deleted_at = None
    row.test_results = {"remote": tool.definition, "hash": tool.hash}
    row.save()


def retire(server_id: int) -> int:
    """Soft-delete every live row of the server; returns how many."""
    now = timezone.now()
    return ToolDefinition.objects.filter(
        created_by=f"{MCP_CREATED_BY_PREFIX}{server_id}", deleted_at__isnull=True
    ).update(deleted_at=now, updated_at=now)


def mark(server_id: int, status: str, error: str = "", *, keep_error: bool = False) -> None:
    """Record a connection state change made by the manager itself (not a user action).

    ``keep_error`` leaves last_error as it is (a reconnect after a crash keeps saying why).
    """
    fields: dict = {"status": status, "updated_at": timezone.now()}
    if not keep_error:
        fields["last_error"] = error[:2000]
    if status == MCPStatus.CONNECTED:
        fields["connected_at"] = timezone.now()
    MCPServer.objects.filter(pk=server_id).update(**fields)

"""A server's tool list → tool_definitions rows, with approval and quarantine.

A tool is *active* (approved) when its definition hash matches what was
approved for it. One whose name, description, input schema or annotations
changed since is *quarantined*; a new tool on a server that has been synced
before follows the server's approval policy; a description with hidden
characters or over the cap is *flagged*. Quarantined, pending and flagged
tools are rows in status ``testing``: never offered, never callable, until
staff approve them (registry.mcp.services.approve_tool).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from registry.mcp.config import ServerConfig
from registry.mcp.naming import NameCollision, RemoteTool, describe, description_flags, names_for
from registry.models import (
    MCP_CREATED_BY_PREFIX, ApprovalPolicy, MCPServer, MCPStatus, ToolDefinition, ToolStatus, ToolType,
)

QUARANTINED = "quarantined: its definition changed since it was approved"
PENDING = "pending: a new tool waiting for staff approval"
FLAGGED = "flagged: its description "


@dataclass
class Inventory:
    active: dict[str, str] = field(default_factory=dict)  # registered name -> server tool name
    held: dict[str, str] = field(default_factory=dict)  # registered name -> why


def tool_state(row: ToolDefinition) -> str:
    """active, quarantined, pending or flagged: what the API and admin show."""
    if row.status == ToolStatus.APPROVED:
        return "active"
    return row.status_message.split(":", 1)[0] or "pending"


@transaction.atomic
def sync(config: ServerConfig, tools: list[RemoteTool]) -> Inventory:
    """Upsert the server's rows, soft-delete the ones it no longer offers.

    Raises NameCollision when a name is taken by a tool of something else.
    """
    server = MCPServer.objects.select_for_update().get(name=config.name)
    first_sync = not server.approved_tools
    mapping = names_for(config.name, [tool.name for tool in tools])
    owner = server.created_by_tag
    existing = {row.name: row for row in ToolDefinition.objects.filter(name__in=mapping.values())}
    clash = [name for name, row in existing.items() if row.created_by != owner]
    if clash:
        raise NameCollision(f"tool name {clash[0]!r} already belongs to another tool")
    inventory = Inventory()
    approved = dict(server.approved_tools)
    for tool in tools:
        name = mapping[tool.name]
        why_held = _why_held(tool, approved.get(tool.name), first_sync, server.approval_policy)
        if why_held is None:
            approved[tool.name] = {"hash": tool.hash, "definition": tool.definition}
            inventory.active[name] = tool.name
        else:
            inventory.held[name] = why_held
        _upsert(existing.get(name), name, tool, config, owner, why_held)
    ToolDefinition.objects.filter(created_by=owner, deleted_at__isnull=True).exclude(
        name__in=mapping.values()
    ).update(deleted_at=timezone.now(), updated_at=timezone.now())
    server.approved_tools = approved
    server.save(update_fields=["approved_tools", "updated_at"])
    return inventory


def _why_held(tool: RemoteTool, approved: dict | None, first_sync: bool, policy: str) -> str | None:
    flags = description_flags(tool.description)
    if approved is not None:
        return None if approved["hash"] == tool.hash else QUARANTINED
    if flags:
        return FLAGGED + " and ".join(flags)
    if first_sync or policy == ApprovalPolicy.AUTO:
        return None
    return PENDING


def _upsert(
    row: ToolDefinition | None, name: str, tool: RemoteTool, config: ServerConfig, owner: str, held: str | None
) -> None:
    row = row or ToolDefinition(name=name)
    row.description = describe(config.name, tool.description)
    row.input_schema = tool.input_schema or {"type": "object"}
    row.implementation = f"mcp:{config.name}:{tool.name}"
    row.tool_type = ToolType.MCP
    row.status = ToolStatus.TESTING if held else ToolStatus.APPROVED
    row.status_message = (held or "")[:200]
    row.category = "mcp"
    row.tenant_id = config.tenant_id
    row.created_by = owner
    row.enabled = True
    row.deleted_at = None
    row.test_results = {"remote": tool.definition}
    row.save()


def retire(config_name: str) -> int:
    """Soft-delete every live row of the server; returns how many."""
    now = timezone.now()
    return ToolDefinition.objects.filter(
        created_by=f"{MCP_CREATED_BY_PREFIX}{config_name}", deleted_at__isnull=True
    ).update(deleted_at=now, updated_at=now)


def mark(name: str, status: str, error: str = "", *, keep_error: bool = False) -> None:
    """Record a connection state change made by the manager itself (not a user action).

    ``keep_error`` leaves last_error as it is (a reconnect after a crash keeps saying why).
    """
    fields: dict = {"status": status, "updated_at": timezone.now()}
    if not keep_error:
        fields["last_error"] = error[:2000]
    if status == MCPStatus.CONNECTED:
        fields["connected_at"] = timezone.now()
    MCPServer.objects.filter(name=name).update(**fields)

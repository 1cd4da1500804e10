"""Handlers of the MCP tools: search the marketplace, install a server (staff only).

Installing never happens on the model's call: the call stores a pending
approval (registry.approvals) and the person decides it in the chat page;
the host then runs the approved call, and only that one, through dispatch.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError

from registry import approvals
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, uniform_contract
from registry.declarations import Tool
from registry.mcp import MCPError, marketplace
from tools.actors import staff_user


@uniform_contract(name="search_mcp_marketplace", is_tabular=False)
def search_mcp_marketplace(inputs: dict, context: ToolContext) -> Ok:
    found = marketplace.search(inputs["query"], inputs.get("limit", 5))
    if not found.listings:
        detail = f" ({found.registry_error})" if found.registry_error else ""
        raise HintException(
            "fetch",
            f"no MCP servers match {inputs['query']!r}{detail}",
            narrow="try one or two plain words, e.g. 'time' or 'git'",
        )
    lines = [f"Found {len(found.listings)} MCP server(s) for {inputs['query']!r}:"]
    for entry in found.listings:
        missing = entry.missing()
        here = f"cannot run here: {missing}" if missing else "can run here"
        lines.append(f"- id={entry.id} ({entry.source}): {entry.description}\n  runs: {entry.launch} ({here})")
    if found.registry_error:
        lines.append(f"Note: {found.registry_error}; only the bundled catalog was searched.")
    return Ok(rows=len(found.listings), data="\n".join(lines))


@uniform_contract(name="install_mcp_server", is_tabular=False)
def install_mcp_server(inputs: dict, context: ToolContext) -> Ok | Err:
    actor = staff_user(context.user_id)
    if actor is None:
        return Err("installing an MCP server needs a staff member", "PermissionDenied")
    try:
        approved = approvals.claim(context, "install_mcp_server", inputs)
    except approvals.ApprovalConflict as exc:
        return Err(f"not installed: {exc}", "ApprovalConflict")
    if approved is None:
        return _ask_the_person(inputs, context, actor)
    listing = marketplace.Listing.from_shown(approved.shown)
    try:
        found = marketplace.install(listing, acting_user=actor, tenant_id=context.tenant_id, name=inputs["name"])
    except (MCPError, PermissionDenied, ValidationError) as exc:
        return Err(f"could not install {listing.id!r}: {_message(exc)}", type(exc).__name__)
    return Ok(
        rows=found["tools_discovered"],
        data=f"Installed {found['server']} (ran: {found['launch']}); tools: {', '.join(found['tool_names'])}. "
        "New tools wait for staff review before they can be called.",
    )


def _ask_the_person(inputs: dict, context: ToolContext, actor: object) -> Ok | Err:
    """Store the install as a pending approval and show it to the person as a card."""
    listing = marketplace.find(inputs["id"])
    if listing is None:
        raise HintException(
            "fetch",
            f"no MCP server with id {inputs['id']!r}",
            narrow="use an id exactly as search_mcp_marketplace returned it",
        )
    missing = listing.missing()
    if missing:
        return Err(f"{listing.id!r} cannot run on this server: {missing}", "Unavailable")
    row = approvals.request_approval(
        acting_user=actor,
        tenant_id=context.tenant_id,
        conversation_id=str(context.conversation_id or ""),
        tool_name="install_mcp_server",
        arguments=dict(inputs),
        shown=listing.shown(inputs["name"]),
    )
    return Ok(
        rows=0,
        effects=Effects(cards=[approvals.card(row)]),
        data=(
            f"Not installed. The person must approve it in the chat page, where a card shows exactly what would run: "
            f"{listing.launch} (package {row.shown['package']}, version {row.shown['version']}). "
            "You cannot approve it and calling again does not install it; tell the user it is waiting for their "
            "click. The outcome is added to the conversation when they decide."
        ),
    )


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


TOOLS = (
    Tool(
        name="search_mcp_marketplace",
        description=(
            "Search for MCP servers that would give you new tools (for example 'github issues', "
            "'time zones', 'fetch web pages'). Returns matching servers from the bundled catalog "
            "and the MCP registry, each with its id and the exact command or URL it runs."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What the server should do."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=search_mcp_marketplace,
        category="mcp",
        status_message="Searching the MCP marketplace",
        timeout_seconds=15,
    ),
    Tool(
        name="install_mcp_server",
        description=(
            "Install an MCP server found with search_mcp_marketplace and connect it, so its tools "
            "become callable. Staff only. It does not install by itself: the person sees the exact "
            "command, package and version in the chat page and approves or rejects it there."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "description": "The server id from the search."},
                "name": {
                    "type": "string",
                    "pattern": "^[a-z0-9][a-z0-9_-]{0,31}$",
                    "description": "Connection name; its tools are called mcp_<name>_<tool>.",
                },
            },
            "required": ["id", "name"],
            "additionalProperties": False,
        },
        handler=install_mcp_server,
        category="mcp",
        status_message="Installing an MCP server",
        timeout_seconds=60,
    ),
)

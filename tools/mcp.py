"""Handlers of the MCP tools: search the marketplace, install a server (staff only),
read a connected server's resources.

Installing never happens on the model's call: the call stores a pending
approval (registry.approvals) and the person decides it in the chat page;
the host then runs the approved call, and only that one, through dispatch.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError

from registry import approvals
from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from registry.mcp import MCPError, marketplace
from tools.actors import staff_user
from tools.lib.closest import not_found


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


RESOURCE_LIST_LIMIT = 200


@uniform_contract(name="read_mcp_resource", is_tabular=False)
def read_mcp_resource(inputs: dict, context: ToolContext) -> Ok | Err:
    from registry.mcp.manager import get_manager
    from registry.mcp.results import resource_to_envelope

    server = _tenant_server(inputs["server"], context.tenant_id)
    manager = get_manager()
    unavailable = manager.ensure_connected(server.pk)
    if unavailable:
        return Err(f"cannot read resources of {server.name!r}: {unavailable}", "MCPUnavailable")
    uri = (inputs.get("uri") or "").strip()
    try:
        if uri:
            read = resource_to_envelope(server.name, uri, manager.read_resource(server.pk, uri))
            if inputs.get("watch"):
                read.warnings.append(Warning("watch", manager.watch_resource(server.pk, uri)))
            return read
        listed, templates = manager.resources(server.pk, RESOURCE_LIST_LIMIT)
    except MCPError as exc:
        return Err(f"could not read resources of {server.name!r}: {exc}", "MCPResourceError")
    return _resource_listing(server.name, listed, templates, manager.changed_resources(server.pk))


def _tenant_server(name: str, tenant_id: str):  # noqa: ANN202 - an MCPServer row
    """The tenant's enabled server called ``name``; a Hint naming the closest of the tenant's servers otherwise."""
    from registry.models import MCPServer

    servers = MCPServer.objects.filter(tenant_id=tenant_id, enabled=True)
    server = servers.filter(name=name).first()
    if server is None:
        raise not_found(
            f"no enabled MCP server called {name!r} is connected for you",
            name,
            servers.values_list("name", flat=True),
            narrow="use a server name exactly as listed",
        )
    return server


def _resource_listing(conn: str, listed: list, templates: list, changed: list[str]) -> Ok:
    if not listed and not templates and not changed:
        return Ok(rows=0, data=f"MCP server {conn!r} offers no resources.")
    lines = [f"Changed since you last read it (watched): {uri}" for uri in changed]
    lines.append(f"MCP server {conn!r} offers {len(listed)} resource(s); read one with its uri:")
    for resource in listed:
        described = f" — {resource.description}" if resource.description else ""
        mime = f" ({resource.mime_type})" if resource.mime_type else ""
        lines.append(f"- {resource.uri}: {resource.title or resource.name}{mime}{described}")
    if templates:
        lines.append(f"{len(templates)} resource template(s); fill the {{placeholders}} to make a uri:")
        for template in templates:
            described = f" — {template.description}" if template.description else ""
            lines.append(f"- {template.uri_template}: {template.title or template.name}{described}")
    if len(listed) >= RESOURCE_LIST_LIMIT or len(templates) >= RESOURCE_LIST_LIMIT:
        lines.append(f"(listing stopped at {RESOURCE_LIST_LIMIT} of each)")
    return Ok(rows=len(listed) + len(templates), data="\n".join(lines))


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


TOOLS = (
    Tool(
        name="read_mcp_resource",
        description=(
            "Read the resources (files, records, documents) an MCP server connected for the user "
            "offers. Without a uri, lists the server's resources and resource templates; with a "
            "uri (from that list, a filled-in template, or a resource link in an earlier tool "
            "result), returns its contents."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "server": {"type": "string", "minLength": 1, "description": "The MCP server's name."},
                "uri": {
                    "type": "string",
                    "maxLength": 2000,
                    "description": "The resource to read; leave out to list what the server offers.",
                },
                "watch": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "With a uri: also watch the resource; a later change is named at the top of "
                        "the server's listing until you read it again."
                    ),
                },
            },
            "required": ["server"],
            "additionalProperties": False,
        },
        handler=read_mcp_resource,
        category="mcp",
        status_message="Reading an MCP resource",
        timeout_seconds=130,
    ),
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

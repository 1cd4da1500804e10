"""Handlers of the MCP tools: search the marketplace, install a server (staff only)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError

from registry.contract import Err, HintException, Ok, uniform_contract
from registry.mcp import MCPError
from registry.mcp import marketplace
from tools.actors import staff_user


@uniform_contract(name="search_mcp_marketplace", is_tabular=False)
def search_mcp_marketplace(inputs: dict, context: dict) -> Ok:
    found = marketplace.search(inputs["query"], inputs.get("limit", 5))
    if not found.listings:
        detail = f" ({found.registry_error})" if found.registry_error else ""
        raise HintException("fetch", f"no MCP servers match {inputs['query']!r}{detail}",
                            narrow="try one or two plain words, e.g. 'time' or 'git'")
    lines = [f"Found {len(found.listings)} MCP server(s) for {inputs['query']!r}:"]
    for entry in found.listings:
        lines.append(f"- id={entry.id} ({entry.source}): {entry.description}\n  runs: {entry.launch}")
    if found.registry_error:
        lines.append(f"Note: {found.registry_error}; only the bundled catalog was searched.")
    return Ok(rows=len(found.listings), data="\n".join(lines))


@uniform_contract(name="install_mcp_server", is_tabular=False)
def install_mcp_server(inputs: dict, context: dict) -> Ok | Err:
    actor = staff_user(context.get("user_id"))
    if actor is None:
        return Err("installing an MCP server needs a staff member", "PermissionDenied")
    listing = marketplace.find(inputs["id"])
    if listing is None:
        raise HintException("fetch", f"no MCP server with id {inputs['id']!r}",
                            narrow="use an id exactly as search_mcp_marketplace returned it")
    if not inputs.get("confirm"):
        return Ok(rows=0, data=f"Not installed yet. This would run: {listing.launch}\n"
                                "Show this to the user; call again with confirm=true if they agree.")
    try:
        found = marketplace.install(listing, acting_user=actor, tenant_id=context["tenant_id"], name=inputs["name"])
    except (MCPError, PermissionDenied, ValidationError) as exc:
        return Err(f"could not install {listing.id!r}: {_message(exc)}", type(exc).__name__)
    return Ok(rows=found["tools_discovered"],
              data=f"Installed {found['server']} (ran: {found['launch']}); tools: {', '.join(found['tool_names'])}")


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)

"""MCP prompts as the chat page's slash commands: the prompts of a tenant's enabled servers,
and one prompt filled in with the person's arguments, as the messages it inserts.

A prompt is text a server offers a person to start from; nothing runs, so any user of the
tenant may list and fetch them (as with ``read_mcp_resource``). Another tenant's servers
are not there.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from registry.mcp import MCPError

logger = logging.getLogger("eunice.mcp")

PROMPT_LIMIT = 200  # per server
ARGUMENT_CHARS = 10_000


class RequestError(ValueError):
    """The person's request names no such server or prompt, or leaves out an argument.
    ``field`` names the part of the request that is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Offered:
    server: str
    name: str
    title: str
    description: str
    arguments: list[dict]

    @property
    def command(self) -> str:
        return f"/{self.server}:{self.name}"


def offered(tenant_id: str) -> tuple[list[Offered], dict[str, str]]:
    """Every prompt of the tenant's enabled servers, and the servers that could not be asked
    (name → why)."""
    answered, failed = each_server(tenant_id, lambda manager, pk: manager.prompts(pk, PROMPT_LIMIT))
    return [_offered(server, prompt) for server, prompts in answered for prompt in prompts], failed


def each_server(tenant_id: str, ask: Callable[[Any, int], Any]) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """``ask(manager, server_id)`` of each enabled server of the tenant, by name, connecting
    one that is not yet; and the servers that could not be asked (name → why)."""
    from registry.mcp.manager import get_manager
    from registry.models import MCPServer

    manager = get_manager()
    answered: list[tuple[str, Any]] = []
    failed: dict[str, str] = {}
    for server in MCPServer.objects.filter(tenant_id=tenant_id, enabled=True).order_by("name"):
        try:
            unavailable = manager.ensure_connected(server.pk)
            if unavailable:
                raise MCPError(unavailable)
            answered.append((server.name, ask(manager, server.pk)))
        except MCPError as exc:
            failed[server.name] = str(exc)
    return answered, failed


def _offered(server: str, prompt: Any) -> Offered:
    arguments = [
        {"name": a.name, "description": a.description or "", "required": bool(a.required)}
        for a in prompt.arguments or []
    ]
    return Offered(server, prompt.name, prompt.title or "", prompt.description or "", arguments)


def render(tenant_id: str, server: str, name: str, arguments: dict) -> list[dict]:
    """The prompt's messages filled in with ``arguments``, as ``{"role", "text"}``. Raises
    RequestError for a server, prompt or argument the request gets wrong, MCPError when the
    server fails."""
    row, manager = connected(tenant_id, server)
    prompt = _prompt(row.name, manager.prompts(row.pk, PROMPT_LIMIT), name)
    filled = _arguments(prompt, arguments)
    result = manager.get_prompt(row.pk, prompt.name, filled)
    return [{"role": message.role, "text": _text(message.content)} for message in result.messages]


def connected(tenant_id: str, server: str) -> tuple[Any, Any]:
    """The tenant's enabled server called ``server``, connected, and the manager. Raises
    RequestError for a name the tenant has no server by, MCPError when it cannot connect."""
    from registry.mcp.manager import get_manager

    row = tenant_server(tenant_id, server)
    manager = get_manager()
    unavailable = manager.ensure_connected(row.pk)
    if unavailable:
        raise MCPError(unavailable)
    return row, manager


def tenant_server(tenant_id: str, name: str) -> Any:
    from registry.models import MCPServer

    servers = MCPServer.objects.filter(tenant_id=tenant_id, enabled=True)
    row = servers.filter(name=name).first()
    if row is None:
        names = list(servers.values_list("name", flat=True))
        raise RequestError("server", f"no enabled MCP server called {name!r}{_choices(closest(name, names))}")
    return row


def _prompt(server: str, prompts: list[Any], name: str) -> Any:
    for prompt in prompts:
        if prompt.name == name:
            return prompt
    near = closest(name, [prompt.name for prompt in prompts])
    raise RequestError("name", f"MCP server {server!r} offers no prompt called {name!r}{_choices(near)}")


def _arguments(prompt: Any, given: dict) -> dict[str, str]:
    declared = {argument.name: argument for argument in prompt.arguments or []}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise RequestError(
            f"arguments.{unknown[0]}",
            f"prompt {prompt.name!r} takes no argument {unknown[0]!r}{_choices(sorted(declared))}",
        )
    missing = [name for name, argument in declared.items() if argument.required and not str(given.get(name, ""))]
    if missing:
        raise RequestError(f"arguments.{missing[0]}", f"prompt {prompt.name!r} needs the argument {missing[0]!r}")
    filled = {name: str(value)[:ARGUMENT_CHARS] for name, value in given.items() if str(value) != ""}
    return filled


def closest(wanted: str, names: list[str]) -> list[str]:
    return difflib.get_close_matches(wanted, names, n=3, cutoff=0.5) or sorted(names)


def _choices(names: list[str]) -> str:
    return f"; choose from: {', '.join(names[:8])}" if names else ""


def _text(content: Any) -> str:
    """A prompt message's content as text: text as is, an embedded text resource inline,
    anything else named in brackets."""
    kind = getattr(content, "type", "")
    if kind == "text":
        return content.text
    if kind == "resource":
        resource = content.resource
        return getattr(resource, "text", None) or f"[resource {resource.uri}]"
    if kind == "resource_link":
        return f"[resource {content.uri}]"
    return f"[{kind or 'content'} from the MCP server]"

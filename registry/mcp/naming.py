"""Provider-safe tool names and the checks on what a server says about its tools."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from registry.mcp import MCPError

MAX_NAME = 64
DESCRIPTION_CAP = 2000
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
# Zero-width characters and bidirectional controls hide text from a human reviewer.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


class NameCollision(MCPError):
    """Two tools would share one registered name."""


def tenant_tag(tenant_id: str) -> str:
    """8 hex digits naming the tenant in its MCP tool names.

    Tool names are one namespace across tenants (the registry's), server names
    one per tenant: the tag keeps two tenants' ``github`` servers apart, so
    neither can take or even detect the other's names.
    """
    return hashlib.sha256(f"eunice.mcp.tenant\x00{tenant_id}".encode()).hexdigest()[:8]


def tool_name(tenant_id: str, conn: str, tool: str) -> str:
    """``mcp_<tenant tag>_<conn>_<tool>`` with anything outside [a-zA-Z0-9_-] replaced by ``_``.

    A name over 64 characters keeps its first 55 and ends in 8 hex digits of
    the tool's hash, so it stays deterministic and distinct.
    """
    name = f"mcp_{tenant_tag(tenant_id)}_{conn}_{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def names_for(tenant_id: str, conn: str, tools: Iterable[str]) -> dict[str, str]:
    """Server tool name -> registered name. Raises NameCollision naming both tools."""
    taken: dict[str, str] = {}
    mapping: dict[str, str] = {}
    for tool in tools:
        name = tool_name(tenant_id, conn, tool)
        if name in taken:
            raise NameCollision(f"MCP server {conn!r}: tools {taken[name]!r} and {tool!r} both map to {name!r}")
        taken[name] = tool
        mapping[tool] = name
    return mapping


def implementation(server_id: int, tool: str) -> str:
    """What a server's tool row keeps as its implementation: ``mcp:<server id>:<tool>``."""
    return f"mcp:{server_id}:{tool}"


def mcp_target(implementation: str) -> tuple[str, str] | None:
    """``(server id, tool)`` from an MCP tool row's ``implementation`` (either may be
    empty if the row is malformed); None if it is not an MCP tool's."""
    kind, _, rest = implementation.partition(":")
    server, colon, tool = rest.partition(":")
    return (server, tool) if kind == "mcp" and colon else None


def remote_tool(implementation: str) -> str | None:
    """The server's own name for a tool, from its row's ``implementation``; None if it
    is not an MCP tool's or names no tool."""
    target = mcp_target(implementation)
    return (target[1] or None) if target is not None else None


def describe(conn: str, description: str) -> str:
    return f"[MCP: {conn}] {description}".strip()


def description_flags(description: str) -> list[str]:
    """Why a description needs a human look before the model may read it (empty: none)."""
    flags = []
    if _INVISIBLE.search(description) or any(
        unicodedata.category(ch) == "Cf" for ch in description if ch not in "\u00ad"
    ):
        flags.append("contains zero-width or bidirectional control characters")
    if len(description) > DESCRIPTION_CAP:
        flags.append(f"is longer than {DESCRIPTION_CAP} characters")
    return flags


# execution.taskSupport "required" (MCP 2025-11-25): the tool runs only as a task, which
# Eunice's client does not offer; such a tool would fail every call.
UNSUPPORTED_TASKS = "it must run as an MCP task (execution.taskSupport: required), which Eunice does not support"


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """What a server says about one tool: its whole tools/list entry, as received.

    Approval is bound to ``hash``, over every field of the entry (canonical
    JSON), so a field the server adds or changes later, known to us or not,
    makes it a different tool that needs a new approval.
    """

    raw: dict

    @property
    def name(self) -> str:
        return str(self.raw.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.raw.get("description") or "")

    @property
    def input_schema(self) -> dict:
        schema = self.raw.get("inputSchema")
        return dict(schema) if isinstance(schema, dict) else {"type": "object"}

    @property
    def annotations(self) -> dict:
        annotations = self.raw.get("annotations")
        return dict(annotations) if isinstance(annotations, dict) else {}

    @property
    def definition(self) -> dict:
        return self.raw

    @property
    def hash(self) -> str:
        return definition_hash(self.raw)

    @property
    def unsupported(self) -> str:
        """Why Eunice cannot run this tool ("" when it can)."""
        execution = self.raw.get("execution")
        if isinstance(execution, dict) and execution.get("taskSupport") == "required":
            return UNSUPPORTED_TASKS
        return ""


def definition_hash(raw: dict) -> str:
    """SHA-256 of a tools/list entry as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()

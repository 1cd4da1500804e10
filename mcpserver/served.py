"""What a bundle serves, and a ToolResult as MCP content: no SDK import here.

The endpoint (mcpserver/endpoint.py) lists ``served_tools`` and hands every call to the
registry's one dispatch path; this module decides which tools that is and turns the
registry's ``ToolResult`` back into MCP content blocks (the reverse of
registry/mcp/results.py: image, audio and resource cards become their blocks again).
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Any

from registry.cards import CardType
from registry.registry import ToolRegistry
from registry.result import ToolResult
from registry.snapshot import Definition


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls the endpoint, for which tenant, through which bundle.

    ``bundle`` is the slug of the bundle served ("" for every tool the tenant may use);
    ``names`` the tool names it serves (None: all of them). ``principal`` identifies the
    credential, so that a session is used only with the credential that opened it.
    """

    user_id: str
    tenant_id: str
    bundle: str
    names: frozenset[str] | None
    principal: str
    instructions: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What the tool list depends on: the tenant and the bundle."""
        return (self.tenant_id, self.bundle)


def served_tools(registry: ToolRegistry, tenant_id: str, names: frozenset[str] | None) -> list[Definition]:
    """The tools served to ``tenant_id`` out of ``names`` (None: all): the ones its model could
    be offered now (approved, enabled, able to run), in name order. May query (the snapshot)."""
    definitions = registry.definitions()
    chosen = definitions.values() if names is None else (definitions[n] for n in names if n in definitions)
    return sorted((d for d in chosen if registry.offered_to(d, tenant_id)), key=lambda d: d.name)


def fingerprint(definitions: list[Definition]) -> str:
    """Changes exactly when the list a client was served would change."""
    digest = hashlib.sha256()
    for definition in definitions:
        digest.update(f"{definition.name}\0{definition.schema_key}\0{definition.description}\0".encode())
    return digest.hexdigest()


def not_served(name: str, definitions: list[Definition]) -> str:
    """The error text for a call of a tool this bundle does not serve, naming the closest that it does."""
    closest = difflib.get_close_matches(name, [d.name for d in definitions], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(closest)}?" if closest else "; tools/list names the tools served here"
    return f"unknown tool {name!r}: this endpoint does not serve it{hint}"


def content_blocks(result: ToolResult) -> list[dict[str, Any]]:
    """``result`` as MCP content blocks (wire dicts): its text, then its image, audio and resource cards."""
    blocks: list[dict[str, Any]] = []
    if result.content:
        blocks.append({"type": "text", "text": result.content})
    for card in result.cards:
        block = _block_of(card)
        if block is not None:
            blocks.append(block)
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks


def _block_of(card: dict) -> dict[str, Any] | None:
    kind = card.get("type")
    if kind in (CardType.IMAGE, CardType.AUDIO) and card.get("data") and card.get("mime_type"):
        return {"type": str(kind), "data": card["data"], "mimeType": card["mime_type"]}
    if kind == CardType.RESOURCE and card.get("uri"):
        resource: dict[str, Any] = {"uri": card["uri"]}
        if card.get("mime_type"):
            resource["mimeType"] = card["mime_type"]
        if card.get("text") is not None:
            resource["text"] = card["text"]
        elif card.get("blob") is not None:
            resource["blob"] = card["blob"]
        else:
            return None
        return {"type": "resource", "resource": resource}
    return None

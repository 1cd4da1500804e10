"""A CallToolResult's content blocks → the contract's Ok | Err. MCP tools cost 0."""

from __future__ import annotations

import base64
import json
from typing import Any

from eunice.jsonlimits import JSONTooDeep, check_depth
from registry.cards import CardType
from registry.contract import Effects, Err, Ok

MAX_TEXT = 200_000


def to_envelope(conn: str, tool: str, result: Any) -> Ok | Err:
    """Map text, image, audio, resource and structured content; ``isError`` → Err."""
    parts: list[str] = []
    cards: list[dict] = []
    for block in result.content or []:
        parts.append(_render_block(block, cards, conn))
    structured = getattr(result, "structured_content", None)
    try:
        # The SDK parsed it (pydantic stops at 200 levels); json.dumps, the cards and
        # every reader after us recurse, so the deployment's own limit applies here.
        check_depth(structured, what=f"the structured result of MCP tool {tool!r}")
    except JSONTooDeep as exc:
        return Err(f"MCP tool {tool!r} on {conn!r} returned a result that is not accepted: {exc}", "MCPResultTooDeep")
    if structured is not None and not parts:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = _capped("\n".join(part for part in parts if part))
    if result.is_error:
        return Err(f"MCP tool {tool!r} on {conn!r} reported an error: {text or 'no detail'}", "MCPToolError")
    data: Any = text
    if structured is not None:
        cards.append({"type": CardType.MCP_STRUCTURED, "data": structured})
    return Ok(rows=1, data=data, effects=Effects(cards=cards, cost=0.0))


def _render_block(block: Any, cards: list[dict], conn: str) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = _decoded_size(block.data)
        cards.append({"type": CardType(kind), "mime_type": block.mime_type, "data": block.data})
        return f"[{kind}: {block.mime_type}, {size} bytes — shown to the user]"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        uri = str(getattr(resource, "uri", ""))
        if text is not None:
            return f"[resource {uri}]\n{text}"
        cards.append({"type": CardType.RESOURCE, "uri": uri, "mime_type": getattr(resource, "mime_type", None)})
        return f"[binary resource {uri}]"
    if kind == "resource_link":
        # The way to follow it, said where the model reads it: the same server's resource.
        described = f" — {block.description}" if getattr(block, "description", None) else ""
        mime = f" ({block.mime_type})" if getattr(block, "mime_type", None) else ""
        return (
            f"[resource link {block.uri}: {getattr(block, 'name', '')}{mime}{described}; read it with "
            f"read_mcp_resource(server={conn!r}, uri={str(block.uri)!r})]"
        )
    return f"[unsupported content block {kind!r}]"


def resource_to_envelope(conn: str, uri: str, result: Any) -> Ok:
    """A resources/read result → Ok: text contents as the model's text (capped like a tool's),
    an image or audio blob as a card the person sees, any other blob as a line naming it."""
    parts: list[str] = []
    cards: list[dict] = []
    for contents in result.contents or []:
        where = str(getattr(contents, "uri", "") or uri)
        mime = getattr(contents, "mime_type", None)
        text = getattr(contents, "text", None)
        if text is not None:
            parts.append(f"[resource {where}{f' ({mime})' if mime else ''}]\n{text}")
            continue
        blob = getattr(contents, "blob", "") or ""
        size = _decoded_size(blob)
        kind = (mime or "").split("/", 1)[0]
        if kind in ("image", "audio"):
            cards.append({"type": CardType(kind), "mime_type": mime, "data": blob})
            parts.append(f"[{kind} resource {where}: {mime}, {size} bytes — shown to the user]")
        else:
            parts.append(f"[binary resource {where}: {mime or 'unknown type'}, {size} bytes]")
    text = _capped("\n\n".join(parts) or f"MCP server {conn!r} returned no contents for {uri}")
    return Ok(rows=len(result.contents or []), data=text, effects=Effects(cards=cards, cost=0.0))


def _capped(text: str) -> str:
    """``text`` within MAX_TEXT characters, saying how much was left out."""
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… [truncated: {len(text) - MAX_TEXT} more characters]"


def _decoded_size(data: str | None) -> int:
    """The size in bytes of a base64 blob."""
    return len(base64.b64decode(data, validate=False)) if data else 0

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


def tool_name(conn: str, tool: str) -> str:
    """``mcp_<conn>_<tool>`` with anything outside [a-zA-Z0-9_-] replaced by ``_``.

    A name over 64 characters keeps its first 55 and ends in 8 hex digits of
    the tool's hash, so it stays deterministic and distinct.
    """
    name = f"mcp_{conn}_{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[:MAX_NAME - 9]}_{digest}"


def names_for(conn: str, tools: Iterable[str]) -> dict[str, str]:
    """Server tool name -> registered name. Raises NameCollision naming both tools."""
    taken: dict[str, str] = {}
    mapping: dict[str, str] = {}
    for tool in tools:
        name = tool_name(conn, tool)
        if name in taken:
            raise NameCollision(
                f"MCP server {conn!r}: tools {taken[name]!r} and {tool!r} both map to {name!r}"
            )
        taken[name] = tool
        mapping[tool] = name
    return mapping


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


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """What a server says about one tool: the parts a reviewer approves."""

    name: str
    description: str
    input_schema: dict
    annotations: dict

    @property
    def definition(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "annotations": self.annotations,
        }

    @property
    def hash(self) -> str:
        canonical = json.dumps(self.definition, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    @classmethod
    def from_sdk(cls, tool: object) -> "RemoteTool":
        annotations = getattr(tool, "annotations", None)
        return cls(
            name=tool.name,  # type: ignore[attr-defined]
            description=getattr(tool, "description", None) or "",
            input_schema=dict(getattr(tool, "input_schema", None) or {"type": "object"}),
            annotations=annotations.model_dump(mode="json", exclude_none=True) if annotations else {},
        )

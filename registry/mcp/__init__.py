"""MCP integration: external MCP servers' tools registered alongside system tools.

The SDK is imported lazily (``sdk_available`` / ``require_sdk``): without the
``mcp`` package the rest of Eunice works and connecting explains how to install it.
"""

from __future__ import annotations

import importlib.util

INSTALL_HINT = "MCP SDK not installed. Run: pip install mcp"


class MCPError(Exception):
    """An MCP server could not be used; the message is safe to show a user."""


class MCPUnavailable(MCPError):
    """The MCP SDK is not installed."""


def sdk_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def require_sdk() -> None:
    """Raises MCPUnavailable, saying how to install the SDK, when it is missing."""
    if not sdk_available():
        raise MCPUnavailable(INSTALL_HINT)

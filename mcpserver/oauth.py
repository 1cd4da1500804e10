"""OAuth 2.1 for the MCP endpoint: access tokens of users, scoped to bundles.

Not yet an authorization server: ``user_and_scopes`` knows no token, so only API
tokens authenticate (mcpserver/callers.py). ``resource_metadata_url`` is where a
client will find the protected-resource metadata.
"""

from __future__ import annotations

from typing import Any


def user_and_scopes(token: str) -> tuple[Any, frozenset[str]] | None:
    """The user an OAuth access token was issued to and its scopes, or None."""
    return None


def resource_metadata_url(scope: dict) -> str:
    """The protected-resource metadata URL (RFC 9728) of the endpoint ``scope`` reached."""
    host = next((v.decode("latin-1") for k, v in scope.get("headers") or () if k == b"host"), "localhost")
    scheme = "https" if scope.get("scheme") == "https" else "http"
    return f"{scheme}://{host}/.well-known/oauth-protected-resource{scope['path'].rstrip('/')}"

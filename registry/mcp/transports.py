"""The MCP transports, one row each (as the model providers are rows of PROVIDERS).

A row says whether a server of its kind starts a local process, how the
server's endpoint is checked before it is saved or connected, and how a
connection opens the SDK transport. The kinds are the database's choices
(``MCPTransport``); a kind with no row here is refused by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from registry.mcp.config import ServerConfig
from registry.mcp.urls import PinnedURL, check_url
from registry.models import MCPTransport


class MissingEndpoint(ValueError):
    """A server without what its transport needs to reach it (``field``: the server's field)."""

    def __init__(self, field: str) -> None:
        super().__init__(f"the server has no {field}")
        self.field = field


@dataclass(frozen=True, slots=True)
class Opened:
    """An SDK transport to enter, and what watches it: a stdio child's exit, an HTTP refusal."""

    context: Any
    stdio: Any = None  # registry.mcp.stdio.StdioExit
    refusal: Any = None  # registry.mcp.http.HTTPRefusal


@dataclass(frozen=True, slots=True)
class Transport:
    kind: MCPTransport
    # It runs a local command: only staff may create one or switch a server to it.
    starts_process: bool
    # Raises MissingEndpoint, or UnsafeURL for an address it may not reach; returns
    # the pinned address an HTTP transport must connect to (None: nothing to pin).
    check: Callable[[ServerConfig], PinnedURL | None]
    open: Callable[[ServerConfig, PinnedURL | None], Opened]


def _check_stdio(config: ServerConfig) -> None:
    if not config.command:
        raise MissingEndpoint("command")


def _open_stdio(config: ServerConfig, pinned: PinnedURL | None) -> Opened:
    from registry.mcp.stdio import StdioExit, stdio_transport

    ended = StdioExit()
    return Opened(stdio_transport(config.command, config.args, config.env, ended), stdio=ended)


def _check_http(config: ServerConfig) -> PinnedURL:
    return check_url(config.url, allow_private=config.allow_private)


def _open_http(config: ServerConfig, pinned: PinnedURL | None) -> Opened:
    from mcp.client.streamable_http import streamable_http_client

    from registry.mcp.http import HTTPRefusal, pinned_client

    assert pinned is not None, "an HTTP server is connected only after check() pinned its address"
    refusal = HTTPRefusal()
    auth = _oauth(config, pinned) if config.uses_oauth else None
    client = pinned_client(
        pinned, config.headers, refusal, auth=auth, elsewhere=auth is not None, allow_private=config.allow_private
    )
    return Opened(_Owning(client, streamable_http_client(pinned.url, http_client=client)), refusal=refusal)


def _oauth(config: ServerConfig, pinned: PinnedURL) -> Any:
    """The SDK's OAuth provider for the connection (registry.mcp.oauth)."""
    from registry.mcp import oauth

    store = config.oauth_store
    if store is None:
        owner = config.oauth_user_id
        if owner is None and config.authorization == "user":
            owner = oauth.ANY_USER  # listing a per-user server's tools: any user's grant will do
        store = oauth.GrantStore(config.id, owner, config.oauth_client)
    flow = config.oauth_flow or oauth.NoPerson(config.id, config.name)
    metadata_url = getattr(flow, "client_metadata_url", None) or oauth.client_metadata_url()
    return oauth.provider(pinned.url, store, flow, metadata_url=metadata_url)


class _Owning:
    """Enter the SDK transport, and close our HTTP client after it."""

    def __init__(self, client: Any, transport: Any) -> None:
        self._client, self._transport = client, transport

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._transport.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


TRANSPORTS: Mapping[str, Transport] = MappingProxyType(
    {
        MCPTransport.STDIO: Transport(MCPTransport.STDIO, starts_process=True, check=_check_stdio, open=_open_stdio),
        MCPTransport.STREAMABLE_HTTP: Transport(
            MCPTransport.STREAMABLE_HTTP, starts_process=False, check=_check_http, open=_open_http
        ),
    }
)


def transport_of(config: ServerConfig) -> Transport:
    """The row of the server's transport. Raises ValueError naming the known ones."""
    row = TRANSPORTS.get(config.transport)
    if row is None:
        raise ValueError(f"unknown MCP transport {config.transport!r}; use one of {', '.join(TRANSPORTS)}")
    return row

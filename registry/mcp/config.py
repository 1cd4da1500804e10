"""What the manager needs to know about a server, detached from the ORM row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from django.conf import settings

CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """``id`` (the server row's) is what the manager keys connections by: names repeat across tenants."""

    id: int
    name: str
    tenant_id: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    allow_private: bool = False
    call_timeout: float = 120.0
    idempotent_tools: frozenset[str] = frozenset()
    # OAuth (registry.mcp.oauth): "none", "tenant" or "user"; credentials staff registered;
    # whose grant this connection uses (None: the tenant's); the person's part (None:
    # nobody, a needed authorization ends the connect with the link); where grants live
    # (None: the database).
    authorization: str = "none"
    oauth_client: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    oauth_user_id: int | None = None
    oauth_flow: Any = None
    oauth_store: Any = None

    @property
    def uses_oauth(self) -> bool:
        return self.authorization != "none"

    @classmethod
    def from_model(cls, server) -> ServerConfig:  # noqa: ANN001 - registry.models.MCPServer
        return cls(
            id=server.pk,
            name=server.name,
            tenant_id=server.tenant_id,
            transport=server.transport,
            command=server.command,
            args=tuple(str(a) for a in server.args or ()),
            env=MappingProxyType({str(k): str(v) for k, v in (server.env or {}).items()}),
            url=server.url,
            headers=MappingProxyType({str(k): str(v) for k, v in (server.headers or {}).items()}),
            allow_private=server.allow_private_network or settings.MCP_ALLOW_PRIVATE_URLS,
            call_timeout=float(server.call_timeout_seconds),
            idempotent_tools=frozenset(server.idempotent_tools or ()),
            authorization=server.authorization,
            oauth_client=MappingProxyType({str(k): str(v) for k, v in (server.oauth_client or {}).items()}),
        )

    @classmethod
    def endpoint_of(cls, server) -> ServerConfig:  # noqa: ANN001 - registry.models.MCPServer
        """Only what says where the server is (no secrets), for checking a row not yet validated."""
        return cls(
            id=server.pk or 0,
            name=server.name,
            tenant_id=server.tenant_id,
            transport=server.transport,
            command=server.command,
            url=server.url,
            allow_private=server.allow_private_network or settings.MCP_ALLOW_PRIVATE_URLS,
        )

    def __repr__(self) -> str:  # env and headers hold secrets
        return f"ServerConfig(name={self.name!r}, transport={self.transport!r})"

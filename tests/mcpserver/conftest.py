"""A running Eunice MCP endpoint (uvicorn on a thread, the test database) and real SDK clients."""

from __future__ import annotations

import threading
from contextlib import asynccontextmanager

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from mcpserver.models import Bundle
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT
from tests.ports import held_port

MODES = ["legacy", "2026-07-28"]  # the 2025-11-25 handshake with Mcp-Session-Id, and stateless


class Served:
    """The product's ASGI app (Django behind ``MCPMount``) served by uvicorn on a thread."""

    def __init__(self, **endpoint_options) -> None:
        import uvicorn
        from django.core.asgi import get_asgi_application

        from mcpserver.endpoint import MCPEndpoint, MCPMount

        self.endpoint = MCPEndpoint(**endpoint_options)
        self.listener = held_port()  # held from now on: no other process can be given the port
        self.port = self.listener.getsockname()[1]
        config = uvicorn.Config(
            MCPMount(get_asgi_application(), self.endpoint),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.listener]}, daemon=True)

    def url(self, bundle: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/mcp/{bundle + '/' if bundle else ''}"

    def __enter__(self) -> Served:
        self.thread.start()
        started = threading.Event()

        def watch() -> None:
            while not self.server.started and self.thread.is_alive():
                started.wait(0.02)
            started.set()

        threading.Thread(target=watch, daemon=True).start()
        assert started.wait(30) and self.server.started, "uvicorn did not start"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.listener.close()


@pytest.fixture
def served():
    with Served(watch_seconds=0.1) as running:
        yield running


def member(username: str, tenant: str) -> str:
    """A user of ``tenant`` with an API token; returns the token's key."""
    user = get_user_model().objects.create_user(username=username, password="x")
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    return Token.objects.create(user=user).key


@pytest.fixture
def ann() -> str:
    return member("ann", TENANT)


@pytest.fixture
def olga() -> str:
    return member("olga", OTHER_TENANT)


def bundle(slug: str, *tools: str, tenant: str = TENANT, **fields) -> Bundle:
    return Bundle.objects.create(tenant_id=tenant, slug=slug, tools=list(tools), **fields)


@asynccontextmanager
async def client(url: str, token: str, mode: str = "legacy", *, event_hooks: dict | None = None, **options):
    """The real SDK client over streamable HTTP, with the API token (and httpx's
    ``event_hooks``, to see the HTTP exchanges)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks=event_hooks) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, **options) as connected:
            yield connected

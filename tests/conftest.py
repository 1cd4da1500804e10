"""Shared cast and helpers: two tenants, a staff member, and `call(name, **inputs)`."""

from __future__ import annotations

from registry.context import ToolContext

import re

import pytest

from registry import registry as registry_module
from registry.models import ToolDefinition, ToolStatus, ToolType

TENANT = "acme"
OTHER_TENANT = "globex"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test gets its own registry and empty caches: nothing leaks between tests."""
    from registry.surface import clear_capability_cache
    from registry.surface_floor import clear_floor_cache

    fresh = registry_module.ToolRegistry()
    monkeypatch.setattr(registry_module.get_registry, "_value", fresh)
    clear_floor_cache()
    clear_capability_cache()
    yield fresh
    # Model servers keep connections open, as the real API does: close the
    # shared providers' before the test's server goes away.
    from llm.roles import close_providers

    close_providers()


@pytest.fixture(autouse=True)
def _system_tools_seeded(request):
    """Tests that use the database start with the catalog seeded, as production does."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return
    transactional = marker.kwargs.get("transaction", False)
    request.getfixturevalue("transactional_db" if transactional else "db")
    from registry.seeding import seed_catalog

    if not ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM).exists():
        seed_catalog()


@pytest.fixture
def registry(fresh_registry):
    return fresh_registry


@pytest.fixture
def make_tool(registry):
    """Create a tool row and (optionally) register its handler."""

    def make(name, handler=None, *, inline=True, timeout=None, **fields):
        defaults = {
            "description": f"Test tool {name}.",
            "input_schema": {"type": "object", "properties": {}},
            "tool_type": ToolType.SYSTEM,
            "status": ToolStatus.APPROVED,
            "category": "test",
        }
        row = ToolDefinition.objects.create(name=name, **{**defaults, **fields})
        if handler is not None:
            registry.register_handler(name, handler, inline=inline, timeout=timeout)
        return row

    return make


def text(result) -> str:
    """What another tool would read of a result: the render minus its `✓ ok.` line."""
    from registry.contract import content_for_data

    return content_for_data(result.content)


@pytest.fixture
def call(registry):
    """call(name, tenant=..., **inputs) -> ToolResult through the one dispatch path."""

    def run(name, tenant=TENANT, context=None, **inputs):
        ctx = ToolContext(**{"tenant_id": tenant, "user_id": "u1", **(context or {})})
        return registry.execute_tool(name, inputs, ctx)

    return run


def external_assets(html: str) -> list[str]:
    """The src/href URLs of a page that another host would serve (an empty list when all are local).

    Asserting on URLs, not on the absence of a word like "cdn": pages embed
    random CSRF tokens and hashes, which now and then spell it.
    """
    urls = re.findall(r'(?:src|href)="([^"]*)"', html)
    return [url for url in urls if url.startswith("//") or re.match(r"[a-z][a-z0-9+.-]*:", url, re.I)]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test, before the test database is dropped, close the database
    connections of worker threads that have ended with their event loops.

    Such a connection is only released by its finaliser, and when that warns
    (ResourceWarning) pytest keeps the warning, and with it the connection, to
    the end of the run; PostgreSQL then refuses to drop a database that still
    has sessions. The suite as a whole happened to release them in time;
    a file run alone (tests/conversations/test_websocket.py) did not.
    """
    if nextitem is not None:
        return
    try:
        import psycopg
    except ImportError:
        return
    import gc

    from django.db import connections

    in_use = {wrapper.connection for wrapper in connections.all(initialized_only=True)}
    gc.collect()
    # type(), not isinstance(): isinstance asks a weakref proxy for its
    # referent's class, and a proxy whose referent is gone raises ReferenceError.
    for leftover in [o for o in gc.get_objects() if issubclass(type(o), psycopg.Connection)]:
        if leftover not in in_use and not leftover.closed:
            leftover.close()

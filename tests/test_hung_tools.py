"""Hung tool handlers stop only their own tool and their own tenant; their threads are replaced."""

import asyncio
import time

import pytest

from registry.context import ToolContext
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db

HUNG_CALLS = 20
PROMPTLY = 2.0  # seconds; a call that runs at once takes milliseconds


@pytest.fixture
def hanging(make_tool):
    """Tools ``hang`` (its calls never return until the test ends, 0.05 s timeout) and ``quick``."""
    handlers.released.clear()
    make_tool("hang", handlers.slow, inline=False, timeout=0.05)
    make_tool("quick", handlers.echo, inline=False, timeout=30)
    yield
    handlers.released.set()


def kind(result) -> str:
    """The error kind a result's render names (``✗ error (Kind): ...``), "" on success."""
    return result.content.partition("(")[2].partition(")")[0] if result.error else ""


def timed(call, name, tenant=TENANT):
    started = time.monotonic()
    result = call(name, tenant=tenant)
    return result, time.monotonic() - started


def test_twenty_hung_calls_of_one_tool_leave_another_tool_running(call, hanging):
    outcomes = [kind(call("hang")) for _ in range(HUNG_CALLS)]
    result, elapsed = timed(call, "quick")
    assert result.error is None, result.content
    assert text(result).startswith("echo")
    assert elapsed < PROMPTLY
    assert set(outcomes) == {"TimeoutError", "ToolBusy"}


def test_a_tool_with_all_its_slots_hung_waits_its_timeout_and_says_why_it_did_not_run(call, hanging, settings):
    settings.EUNICE_TOOL_CALLS_PER_TOOL = 3
    assert [kind(call("hang")) for _ in range(3)] == ["TimeoutError"] * 3
    result, elapsed = timed(call, "hang")
    assert result.content == (
        "✗ error (ToolBusy): hang already has 3 calls running;"
        " no slot came free within 0.05 s, so this call did not run"
    )
    assert elapsed < PROMPTLY


@pytest.mark.django_db(transaction=True)  # the calls read the tools on another thread
def test_a_burst_of_quick_calls_past_the_slots_waits_its_turn_and_every_call_runs(registry, make_tool, settings):
    """200 conversations calling one cheap tool at once: a few run at a time, none is refused."""
    settings.EUNICE_TOOL_CALLS_PER_TOOL = 2
    settings.EUNICE_TOOL_CALLS_PER_TENANT = 3
    make_tool("quick", handlers.echo, inline=False, timeout=30)

    async def burst():
        context = ToolContext(tenant_id=TENANT, user_id="u1")
        return await asyncio.gather(*(registry.aexecute_tool("quick", {}, context) for _ in range(40)))

    results = asyncio.run(burst())
    assert [r.error for r in results] == [None] * 40, {r.content for r in results if r.error}
    assert registry.workers().stats()["queued"] == 0


def test_one_tenants_hung_calls_leave_another_tenant_running(call, hanging, settings):
    settings.EUNICE_TOOL_CALLS_PER_TOOL = 100
    outcomes = [kind(call("hang")) for _ in range(HUNG_CALLS)]
    assert outcomes.count("TimeoutError") == 16  # EUNICE_TOOL_CALLS_PER_TENANT
    assert outcomes.count("ToolBusy") == HUNG_CALLS - 16  # the tenant's own calls waited for its slots
    result, elapsed = timed(call, "quick", tenant=OTHER_TENANT)
    assert result.error is None, result.content
    assert elapsed < PROMPTLY


def test_threads_lost_to_hung_handlers_are_replaced_and_counted(call, hanging, registry):
    for _ in range(5):
        call("hang")
    assert call("quick").error is None
    stats = registry.workers().stats()
    assert stats["lost"] == 5 and stats["hung"] == 5
    handlers.released.set()
    deadline = time.monotonic() + 5
    while registry.workers().stats()["hung"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert registry.workers().stats() == {**stats, "hung": 0, "busy": 0}


@pytest.mark.django_db(transaction=True)  # the calls read the tools on another thread
def test_hung_calls_from_async_callers_leave_other_tools_running(registry, hanging):
    async def scenario():
        context = ToolContext(tenant_id=TENANT, user_id="u1")
        hung = await asyncio.gather(*(registry.aexecute_tool("hang", {}, context) for _ in range(HUNG_CALLS)))
        started = time.monotonic()
        quick = await registry.aexecute_tool("quick", {}, context)
        return hung, quick, time.monotonic() - started

    hung, quick, elapsed = asyncio.run(scenario())
    assert {kind(r) for r in hung} == {"TimeoutError", "ToolBusy"}
    assert quick.error is None, quick.content
    assert elapsed < PROMPTLY


def test_health_shows_the_tool_threads(client, call, hanging):
    call("hang")
    body = client.get("/health/").json()
    assert body["tool_threads"] == {**body["tool_threads"], "lost": 1, "hung": 1}

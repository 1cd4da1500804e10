"""An MCP call awaited by a coroutine (a turn's) runs on its loop: no DB thread, no worker.

Everything the threaded path guarantees still holds there: the slots of the tool and
the tenant, the timeouts, a cancel that tells the server to stop, the reconnect after
a crash, and the execution log row.
"""

import asyncio
import threading
import time

import pytest

from registry import aio
from registry.context import ToolContext
from registry.execlog import writer
from registry.mcp import manager as manager_module
from registry.models import ToolExecutionLog
from tests.conftest import TENANT, text
from tests.mcp.conftest import WAIT, mcp, server_id
from tests.mcp.test_stdio_lifecycle import connect

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def patient_connect(monkeypatch):
    """Connecting is not what these tests are about: on a loaded machine starting the
    server and importing the SDK can take longer than the product's 10 s (to connect,
    and for a call to wait for a reconnect)."""
    monkeypatch.setattr(manager_module, "CONNECT_TIMEOUT", 60.0)
    monkeypatch.setattr(manager_module, "RECONNECT_WAIT_SECONDS", WAIT)


@pytest.fixture
def turn_loop():
    """An event loop of its own on a thread, as a turn's is (not the MCP loop)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(WAIT)
    loop.close()


def awaited(registry, loop, name, context=None, **inputs):
    """``aexecute_tool`` awaited by a coroutine on ``loop``; its ToolResult."""
    ctx = ToolContext(**{"tenant_id": TENANT, "user_id": "u1", **(context or {})})
    return asyncio.run_coroutine_threadsafe(registry.aexecute_tool(name, inputs, ctx), loop).result(WAIT)


@pytest.fixture
def counted_threads(monkeypatch):
    """The steps that went to a DB thread, with the execution log buffered as it is when
    serving (the tests' settings write each row at once, which is a query)."""
    monkeypatch.setattr(writer(), "flush_seconds", 60.0)
    steps = []
    real = aio.in_db_thread

    def counting(func):
        steps.append(getattr(func, "__name__", repr(func)))
        return real(func)

    monkeypatch.setattr(aio, "in_db_thread", counting)
    return steps


def test_a_call_takes_no_db_thread_and_no_worker_thread_and_is_logged(
    manager, registry, turn_loop, counted_threads, approval_rules_kept_fresh
):
    connect(manager)
    assert text(awaited(registry, turn_loop, mcp("add"), a=1, b=1)) == "2"  # loads the definitions and the rules
    writer().flush()
    before = ToolExecutionLog.objects.filter(tool_name=mcp("add")).count()
    counted_threads.clear()
    for loop in (turn_loop, manager.loop()):  # a turn's loop, and the session's own
        for n in range(10):
            assert text(awaited(registry, loop, mcp("add"), a=n, b=1)) == str(n + 1)
    assert awaited(registry, turn_loop, mcp("fail")).error
    assert counted_threads == []
    assert registry.workers().stats()["threads"] == 0
    writer().flush()
    rows = ToolExecutionLog.objects.filter(tool_name__in=[mcp("add"), mcp("fail")]).order_by("id")
    assert rows.filter(tool_name=mcp("add")).count() == before + 20
    assert rows.last().outcome == "err"


def test_slots_hold_and_a_cancel_frees_its_slot(manager, registry, turn_loop, settings):
    settings.EUNICE_TOOL_CALLS_PER_TOOL = 1
    connect(manager)
    awaited(registry, turn_loop, mcp("add"), a=1, b=1)

    async def two_at_once():
        ctx = ToolContext(tenant_id=TENANT, user_id="u1")
        started = time.monotonic()
        first = asyncio.ensure_future(registry.aexecute_tool(mcp("slow"), {"seconds": 0.5}, ctx))
        await asyncio.sleep(0.05)
        second = await registry.aexecute_tool(mcp("slow"), {"seconds": 0.01}, ctx)
        return time.monotonic() - started, (await first), second

    took, first, second = asyncio.run_coroutine_threadsafe(two_at_once(), turn_loop).result(WAIT)
    assert text(first) == "slept 0.5" and text(second) == "slept 0.01"
    assert took >= 0.5, "the second call ran beside the first, past the tool's one slot"

    async def cancelled():
        ctx = ToolContext(tenant_id=TENANT, user_id="u1")
        task = asyncio.ensure_future(registry.aexecute_tool(mcp("slow"), {"seconds": 30}, ctx))
        await asyncio.sleep(0.3)
        at = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return time.monotonic() - at
        raise AssertionError("the call was not cancelled")

    assert asyncio.run_coroutine_threadsafe(cancelled(), turn_loop).result(WAIT) < 0.1
    settings.TOOL_TIMEOUT_SECONDS = 5
    assert text(awaited(registry, turn_loop, mcp("slow"), seconds=0.01)) == "slept 0.01"  # its slot is free

    settings.TOOL_TIMEOUT_SECONDS = 0.5
    held = registry.workers().reserve(mcp("slow"), TENANT)  # another call has the tool's one slot
    assert held.done()
    busy = awaited(registry, turn_loop, mcp("slow"), seconds=0.01)
    assert busy.content == (
        f"✗ error (ToolBusy): {mcp('slow')} already has 1 calls running; "
        "no slot came free within 0.5 s, so this call did not run"
    )
    registry.workers().release(mcp("slow"), TENANT)
    timed_out = awaited(registry, turn_loop, mcp("slow"), seconds=2)
    assert timed_out.content == "✗ error (TimeoutError): timed out after 0.5 s"
    assert text(awaited(registry, turn_loop, mcp("slow"), seconds=0.01)) == "slept 0.01"
    assert registry.workers().stats() == {"threads": 0, "busy": 0, "queued": 0, "lost": 0, "hung": 0}


def test_the_servers_timeout_holds_and_a_crashed_server_is_reconnected(manager, registry, turn_loop):
    connect(manager, call_timeout_seconds=0.5)
    result = awaited(registry, turn_loop, mcp("slow"), seconds=5)
    assert result.content == "✗ error (TimeoutError): MCP server 'demo' did not answer 'slow' within 0.5 s"
    assert text(awaited(registry, turn_loop, mcp("add"), a=1, b=1)) == "2"
    result = awaited(registry, turn_loop, mcp("crash"))
    assert "MCPConnectionLost" in result.content and "exited with code 3" in result.content
    assert text(awaited(registry, turn_loop, mcp("add"), a=2, b=2)) == "4"  # waits for the reconnect
    assert manager.wait_connected(server_id("demo"), WAIT)

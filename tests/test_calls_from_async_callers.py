"""A synchronous tool called from a coroutine: one trip off the event loop, finished once.

The call is prepared on the caller's loop when that needs no query, and the tool worker
that runs the handler also renders and logs the result. Whichever of the worker and the
caller (its timeout, the user's cancel) gets there first finishes the call; the other
leaves it alone.
"""

import asyncio
import threading
import time

import pytest

from registry import aio
from registry.context import ToolContext
from registry.execlog import writer
from registry.models import ToolExecutionLog
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)  # handlers and the log run on other threads

ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def context() -> ToolContext:
    return ToolContext(tenant_id=TENANT, user_id="u1")


def rows(name: str) -> list[ToolExecutionLog]:
    writer().flush()
    return list(ToolExecutionLog.objects.filter(tool_name=name).order_by("id"))


def after_the_worker(returned: threading.Event) -> None:
    """Once the handler has returned, and the worker has had ample time to finish the call
    if it were going to (it takes milliseconds)."""
    assert returned.wait(10)
    time.sleep(0.3)


def test_a_sync_tool_called_from_a_coroutine_needs_no_database_thread(
    registry, make_tool, monkeypatch, approval_rules_kept_fresh
):
    threads = []

    def add(inputs, ctx):
        threads.append(threading.get_ident())
        return str(inputs["a"] + inputs["b"])

    make_tool("add", add, input_schema=ADD)

    async def calls():
        first = await registry.aexecute_tool("add", {"a": 1, "b": 1}, context())  # reads the definitions and rules
        trips = []
        real = aio.in_db_thread
        monkeypatch.setattr(aio, "in_db_thread", lambda func: trips.append(func) or real(func))
        later = [await registry.aexecute_tool("add", {"a": 2, "b": n}, context()) for n in range(3)]
        return first, later, trips, threading.get_ident()

    first, later, trips, loop_thread = asyncio.run(calls())
    assert [text(r) for r in later] == ["2", "3", "4"]
    assert trips == []
    assert loop_thread not in threads  # the handler still ran off the loop
    assert [row.success for row in rows("add")] == [True] * 4


def test_invalid_input_is_answered_on_the_loop_and_logged(registry, make_tool):
    make_tool("add", lambda inputs, ctx: "never", input_schema=ADD)

    async def calls():
        await registry.aexecute_tool("add", {"a": 1, "b": 1}, context())
        return await registry.aexecute_tool("add", {"a": "one"}, context())

    result = asyncio.run(calls())
    assert "invalid input for add" in result.content
    assert [row.outcome for row in rows("add")] == ["ok", "hint"]


def test_a_call_past_its_timeout_is_logged_once_with_the_timeout_not_its_late_answer(registry, make_tool):
    returned = threading.Event()

    def late(inputs, ctx):
        time.sleep(0.5)
        returned.set()
        return "too late"

    make_tool("late", late, inline=False, timeout=0.1)
    result = asyncio.run(registry.aexecute_tool("late", {}, context()))
    assert result.content.startswith("✗ error (TimeoutError): timed out after 0.1 s")
    after_the_worker(returned)
    assert [(row.outcome_kind, row.success) for row in rows("late")] == [("TimeoutError", False)]


def test_a_cancelled_call_is_not_logged_when_its_handler_returns_afterwards(registry, make_tool):
    entered, release, returned = threading.Event(), threading.Event(), threading.Event()

    def waits(inputs, ctx):
        entered.set()
        release.wait(10)
        returned.set()
        return "finished after the cancel"

    make_tool("waits", waits, inline=False, timeout=30)

    async def cancel_it():
        task = asyncio.ensure_future(registry.aexecute_tool("waits", {}, context()))
        await asyncio.get_running_loop().run_in_executor(None, entered.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    release.set()
    after_the_worker(returned)
    assert rows("waits") == []  # the caller logs its own answer (conversations.dispatcher)


def test_a_call_that_ends_as_its_timeout_fires_is_still_answered_and_logged_once(registry, make_tool):
    def borderline(inputs, ctx):
        time.sleep(0.1)
        return "just in time"

    make_tool("borderline", borderline, inline=False, timeout=0.1)

    async def calls():
        return await asyncio.gather(*(registry.aexecute_tool("borderline", {}, context()) for _ in range(8)))

    results = asyncio.run(calls())
    time.sleep(0.5)  # every handler has returned (0.1 s each), and its worker moved on
    logged = rows("borderline")
    assert len(logged) == len(results)  # whichever side won each race, one row a call
    assert sorted(row.success for row in logged) == sorted(r.error is None for r in results)

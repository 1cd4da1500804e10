"""Where async code runs its blocking work: bookkeeping on a few database threads, tools elsewhere."""

import asyncio
import threading
import time

import pytest
from asgiref.sync import async_to_sync

from registry.aio import in_db_thread, in_worker_thread
from registry.context import ToolContext

pytestmark = pytest.mark.django_db(transaction=True)


def thread_name() -> str:
    return threading.current_thread().name


def test_bookkeeping_runs_on_as_many_database_threads_as_configured(settings):
    settings.EUNICE_DB_THREADS = 2
    lock, running, most = threading.Lock(), [0], [0]

    def step():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)
        with lock:
            running[0] -= 1
        return thread_name()

    async def four_at_once():
        return await asyncio.gather(*(in_db_thread(step)() for _ in range(4)))

    names = async_to_sync(four_at_once)()
    assert most[0] == 2
    assert len(set(names)) == 2 and all(name.startswith("db2") for name in names)


def test_long_work_runs_outside_the_database_threads():
    assert not async_to_sync(in_worker_thread(thread_name))().startswith("db")
    assert async_to_sync(in_db_thread(thread_name))().startswith("db")


def test_a_blocked_tool_does_not_hold_up_bookkeeping(settings, registry, make_tool):
    settings.EUNICE_DB_THREADS = 1
    entered, release = threading.Event(), threading.Event()

    def blocking(inputs, context):
        entered.set()
        release.wait(10)
        return {"ok": True}

    make_tool("blocking", blocking)

    async def tool_and_bookkeeping():
        call = asyncio.ensure_future(registry.aexecute_tool("blocking", {}, ToolContext(tenant_id="t")))
        await asyncio.get_running_loop().run_in_executor(None, entered.wait, 10)
        done_meanwhile = await asyncio.wait_for(in_db_thread(lambda: "done")(), timeout=5)
        release.set()
        result = await call
        return done_meanwhile, result

    done_meanwhile, result = async_to_sync(tool_and_bookkeeping)()
    assert done_meanwhile == "done" and result.error is None


def test_a_module_functions_step_is_made_once_and_a_closures_on_every_call(settings):
    assert in_db_thread(thread_name) is in_db_thread(thread_name)

    def local() -> str:
        return "here"

    assert in_db_thread(local) is not in_db_thread(local)  # nothing it holds is kept
    settings.EUNICE_DB_THREADS = 3  # a pool of another size: a step of its own
    assert async_to_sync(in_db_thread(thread_name))().startswith("db3")

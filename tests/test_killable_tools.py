"""Killable tools (registry.killable): a hung call's process is killed within its timeout and a
bound, on a timeout or the caller's cancel, and the next call runs in a new process."""

import asyncio
import dataclasses
import os
import time
from pathlib import Path

import pytest

from registry.context import ToolContext
from registry.killable import KillableProcesses
from tests import killable_handlers
from tests.conftest import TENANT, text
from tests.faults.operator import alive, wait_for

pytestmark = pytest.mark.django_db(transaction=True)  # the calls read the tools on another thread

TIMEOUT = 1.0
BOUND = 10.0  # generous: the kill itself takes milliseconds; the machine is shared


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    """One set of children for the module (each costs a Django start-up); they see the hanging
    web search backend and where it writes its process id."""
    pid_file = tmp_path_factory.mktemp("killable") / "search.pid"
    saved = {name: os.environ.get(name) for name in ("EUNICE_WEB_SEARCH_BACKEND", "EUNICE_TEST_PID_FILE")}
    os.environ["EUNICE_WEB_SEARCH_BACKEND"] = "tests.killable_handlers.hanging_search"
    os.environ["EUNICE_TEST_PID_FILE"] = str(pid_file)
    pool = KillableProcesses(idle=2)
    pool.warm(wait=True)  # a call's timeout is for the call, not for the children's start-up
    yield pool
    pool.close()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def tool(registry, make_tool, processes, tmp_path):
    """``maybe_hang``, killable with a 1 s timeout, on the module's children; its pid file."""
    registry._killable = processes
    make_tool("maybe_hang", input_schema={"type": "object"})
    registry.register_handler("maybe_hang", killable_handlers.maybe_hang, killable=True, timeout=TIMEOUT)
    return tmp_path / "maybe_hang.pid"


def context() -> ToolContext:
    return ToolContext(tenant_id=TENANT, user_id="u1")


def pid_in(path) -> int:  # noqa: ANN001
    return int(wait_for(lambda: path.exists() and path.read_text(), BOUND) or 0)


def test_a_hung_killable_call_is_killed_at_its_timeout_and_the_next_call_runs_in_a_new_process(registry, tool):
    started = time.monotonic()
    result = registry.execute_tool("maybe_hang", {"pid_file": str(tool), "hang": True}, context())
    took = time.monotonic() - started

    assert result.error and "(TimeoutError)" in result.content and "its process was killed" in result.content
    hung = pid_in(tool)
    assert not alive(hung), "the hung handler's process is still running"
    assert took < TIMEOUT + BOUND
    tool.unlink()
    after = registry.execute_tool("maybe_hang", {"pid_file": str(tool)}, context())
    assert after.error is None, after.content
    assert text(after) == f"ran in {pid_in(tool)} for {TENANT} as maybe_hang"
    assert pid_in(tool) != hung
    assert registry.workers().stats()["hung"] == 0  # no thread was left behind either


def test_a_cancelled_killable_call_has_its_process_killed_at_once(registry, tool):
    async def cancel_while_it_hangs():
        call = asyncio.ensure_future(
            registry.aexecute_tool("maybe_hang", {"pid_file": str(tool), "hang": True}, context())
        )
        await asyncio.to_thread(pid_in, tool)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancel_while_it_hangs())
    hung = pid_in(tool)
    assert wait_for(lambda: not alive(hung), BOUND), "the cancelled handler's process is still running"


def test_web_search_is_killable_and_a_hung_backend_is_killed_at_its_timeout(registry, processes, settings):
    settings.WEB_SEARCH_BACKEND = "tests.killable_handlers.hanging_search"
    registry._killable = processes
    registry.definitions()  # loads the system tools' handlers, as declared
    declared = registry.handler("web_search")
    assert declared is not None and declared.killable
    registry._handlers["web_search"] = dataclasses.replace(declared, timeout=TIMEOUT)  # its 30 s, shortened
    pid_file = Path(os.environ["EUNICE_TEST_PID_FILE"])

    started = time.monotonic()
    result = registry.execute_tool("web_search", {"query": "eunice"}, context())

    assert "(TimeoutError)" in result.content and "its process was killed" in result.content, result.content
    assert time.monotonic() - started < TIMEOUT + BOUND
    assert not alive(pid_in(pid_file))

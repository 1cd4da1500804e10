"""What is decided once (the handler registered at connect, the lean thread hop) never
lets a call through that the catalog now refuses: the very next call is checked."""

import asyncio
import threading
import time

import pytest

from registry.mcp.config import ServerConfig
from registry.mcp.manager import CallCancelled
from registry.models import ToolDefinition, ToolStatus
from tests.conftest import text
from tests.mcp.conftest import WAIT, add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def connected(manager, call, registry):
    manager.connect(ServerConfig.from_model(add_server()))
    assert text(call(mcp("add"), a=1, b=2)) == "3"
    assert registry.has_handler(mcp("add"))  # the per-connection handler is in place


def test_a_withdrawn_approval_refuses_the_very_next_call(connected, call, registry):
    row = ToolDefinition.objects.get(name=mcp("add"))
    row.status, row.status_message = ToolStatus.TESTING, "pending: approval withdrawn"
    row.save()
    assert "unknown tool" in call(mcp("add"), a=1, b=2).content
    assert registry.has_handler(mcp("add"))  # refused by the check, not by a missing handler


def test_a_disabled_tool_refuses_the_very_next_call(connected, call):
    row = ToolDefinition.objects.get(name=mcp("add"))
    row.enabled = False
    row.save()
    assert "unknown tool" in call(mcp("add"), a=1, b=2).content


def test_a_re_enabled_tool_runs_again_on_the_next_call(connected, call):
    row = ToolDefinition.objects.get(name=mcp("add"))
    row.enabled = False
    row.save()
    row.enabled = True
    row.save()
    assert text(call(mcp("add"), a=2, b=2)) == "4"


def test_the_thread_hop_hands_back_the_coroutines_own_exception(manager):
    async def fails():
        raise LookupError("from the loop")

    with pytest.raises(LookupError, match="from the loop"):
        manager._run(fails(), WAIT)


def hangs_until_cancelled(stopped: threading.Event):
    """A coroutine that waits out WAIT unless cancelled, and says when it was."""

    async def hangs():
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            stopped.set()
            raise

    return hangs()


def test_a_timed_out_hop_cancels_the_work_on_the_loop(manager):
    stopped = threading.Event()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no answer within 0.2 s"):
        manager._run(hangs_until_cancelled(stopped), 0.2)
    assert stopped.wait(WAIT)
    assert time.monotonic() - started < WAIT


def test_a_cancelled_hop_stops_waiting_and_cancels_the_work(manager):
    stopped = threading.Event()
    asked = time.monotonic() + 0.2
    with pytest.raises(CallCancelled):
        manager._run(hangs_until_cancelled(stopped), WAIT, cancelled=lambda: time.monotonic() > asked)
    assert stopped.wait(WAIT)

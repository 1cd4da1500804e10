"""A cancelled MCP call stops waiting at once and tells the server to stop."""

import threading
import time

import pytest

from conversations.state import CancelToken
from tests.conftest import text
from tests.mcp.conftest import mcp
from tests.mcp.test_stdio_lifecycle import connect

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cancelled_call_returns_at_once_and_the_session_stays_usable(manager, call):
    connect(manager)
    assert text(call(mcp("add"), a=1, b=1)) == "2"  # the registry is loaded: what follows is the call
    token = CancelToken()
    cancelled_at = {}

    def cancel_soon():
        time.sleep(0.3)
        cancelled_at["t"] = time.monotonic()
        token.cancel()

    threading.Thread(target=cancel_soon).start()
    result = call(mcp("slow"), context={"cancel": token}, seconds=30)
    latency = time.monotonic() - cancelled_at["t"]
    assert result.content.startswith(
        "✗ error (Cancelled): cancelled by the user; MCP server 'demo' was told to stop 'slow'"
    )
    # the call would take 30 s; generous for a loaded machine (bench/cancel.py measures it)
    assert latency < 1.0, f"stopped waiting {latency * 1000:.0f} ms after the cancel"
    assert text(call(mcp("add"), a=1, b=2)) == "3"

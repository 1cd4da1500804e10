"""300 list_changed notifications cost a re-listing or two, and an unrelated call barely notices."""

import statistics
import threading
import time

import pytest

from registry.mcp.config import ServerConfig
from registry.models import ToolDefinition
from tests.conftest import text
from tests.mcp.conftest import WAIT, entry, mcp, shifting_server

pytestmark = pytest.mark.django_db(transaction=True)

BURST = 300
# The bound is 100 ms over the usual latency; this machine is shared, so the
# assertion allows more. The old code stalled an unrelated call for about 2.4 s.
SLACK = 0.5


def timed(call) -> float:
    start = time.perf_counter()
    assert text(call(mcp("ping", "other"))) == "ping ran"
    return time.perf_counter() - start


def counter_description() -> str:
    row = ToolDefinition.objects.live().filter(name=mcp("counter", "shifty")).first()
    return row.description if row else ""


def test_a_burst_is_coalesced_and_the_list_converges_to_the_last_one(manager, call):
    manager.connect(ServerConfig.from_model(shifting_server("other", tools=[entry("ping")], approval_policy="auto")))
    shifty = shifting_server(tools=[entry("read")], approval_policy="auto")
    manager.connect(ServerConfig.from_model(shifty))
    usual = [timed(call) for _ in range(20)]

    before = manager.sync_count(shifty.pk)
    burst = threading.Thread(target=manager.call_tool, args=(shifty.pk, "control", {"burst": BURST}))
    burst.start()
    during, final = [], f"[MCP: shifty] version {BURST - 1}"
    deadline = time.monotonic() + WAIT
    while counter_description() != final and time.monotonic() < deadline:
        during.append(timed(call))
    burst.join(WAIT)
    assert counter_description() == final, "the rows converge to the server's last list"
    # The rows are written before the sync is counted (registry.mcp.manager._adopt):
    # wait for the count, or a slow machine reads it in between.
    manager.wait_synced(shifty.pk, before, WAIT)
    syncs = manager.sync_count(shifty.pk) - before
    assert 1 <= syncs <= 3, f"{BURST} notifications cost {syncs} re-listings"
    if during:
        assert max(during) <= max(usual) + SLACK, (max(during), max(usual))
        assert statistics.median(during) <= statistics.median(usual) + 0.1

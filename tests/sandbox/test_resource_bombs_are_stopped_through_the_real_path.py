"""Resource bombs in an approved custom tool, called through the registry: each ends
with a clear Err naming what stopped it, well within a generous bound."""

import pytest

from registry.models import SandboxRun

pytestmark = pytest.mark.django_db

BOUND_SECONDS = 15

# name -> (code, plain Python?, what the Err says, the layer that stops it)
BOMBS = {
    "a memory bomb": ("result = np.ones((60000, 60000)).sum()", False, "MemoryError", "os:memory"),
    "a fork bomb": ("import os\nwhile True:\n    os.fork()", True, "PermissionError", "os"),
    "a huge result": ("result = 'x' * (5 * 1024 * 1024)", False, "the limit is 1,048,576", "result_cap"),
    "deep recursion": ("def down(n):\n    return down(n + 1)\nresult = down(0)", False, "RecursionError", "tool"),
    "sleeping past the wall limit": ("import time\ntime.sleep(60)", True, "longer than 2 s", "supervisor:wall"),
}


@pytest.fixture
def tight_limits(settings):
    settings.SANDBOX = {**settings.SANDBOX, "CPU_SECONDS": 1, "WALL_SECONDS": 2.0}


def test_a_cpu_loop_is_stopped_by_the_cpu_limit(approved_tool, call, settings):
    # A busy machine gives the loop its 1 s of CPU slower than 1 s of wall time.
    settings.SANDBOX = {**settings.SANDBOX, "CPU_SECONDS": 1, "WALL_SECONDS": float(BOUND_SECONDS)}
    approved_tool("spin", "while True:\n    pass")
    result = call("spin")
    assert "more than 1 s of CPU" in result.error and "[stopped by: os:cpu]" in result.error
    assert SandboxRun.objects.get(tool_name="spin").wall_ms < BOUND_SECONDS * 1000


@pytest.mark.parametrize(("code", "plain", "says", "layer"), BOMBS.values(), ids=BOMBS.keys())
def test_a_bomb_is_stopped_with_a_clear_error(approved_tool, call, tight_limits, monkeypatch, code, plain, says, layer):
    from registry.sandbox import service

    monkeypatch.setattr(service, "LANGUAGE_LAYER", not plain)
    approved_tool("bomb", code)
    result = call("bomb")
    assert says in result.error and f"[stopped by: {layer}]" in result.error
    assert "Traceback" not in result.content
    run = SandboxRun.objects.get(tool_name="bomb")
    # The host's own measure of the run (the first call also loads every system tool's module).
    assert run.stopped_by == layer and run.wall_ms < BOUND_SECONDS * 1000

"""Attack class: CPU, wall-clock, memory and output bombs."""

import time

from tests.sandbox.conftest import run


def test_a_busy_loop_is_killed_by_the_cpu_limit_long_before_the_wall_clock():
    # RLIMIT_CPU counts CPU seconds: on a busy machine they pass slower than
    # wall-clock seconds, so the bound here is the wall limit, not 1 s of wall time.
    started = time.monotonic()
    outcome = run("while True:\n    pass", cpu_seconds=1, wall_seconds=10)
    assert outcome.stopped_by == "os:cpu"
    assert time.monotonic() - started < 10


def test_a_sleeping_run_is_killed_by_the_wall_clock_within_a_second():
    started = time.monotonic()
    outcome = run("import time\ntime.sleep(60)", language=False, wall_seconds=1)
    assert outcome.stopped_by == "supervisor:wall"
    assert "longer than 1 s" in outcome.error
    assert time.monotonic() - started < 1 + 1


def test_a_huge_array_is_stopped_by_the_memory_limit():
    outcome = run("result = np.ones((60000, 60000)).sum()")
    assert outcome.stopped_by == "os:memory"


def test_a_result_over_the_cap_is_refused_with_a_clear_error():
    outcome = run("result = 'x' * (200 * 1024 * 1024)", memory_bytes=2 << 30)
    assert outcome.stopped_by == "result_cap"
    assert "the limit is 1,048,576" in outcome.error


def test_the_host_refuses_an_oversized_frame_without_reading_it():
    code = (
        "import os, socket, stat, struct\n"
        "fd = next(f for f in range(3, 64) if _is_socket(f))\ns = socket.socket(fileno=fd)\n"
        "s.sendall(struct.pack('!I', 500 * 1024 * 1024))\nimport time\ntime.sleep(5)"
    )
    finder = (
        "def _is_socket(f):\n    try:\n        return stat.S_ISSOCK(os.fstat(f).st_mode)\n"
        "    except OSError:\n        return False\n"
    )
    outcome = run(code.replace("fd = next", finder + "fd = next"), language=False)
    assert outcome.stopped_by == "result_cap"

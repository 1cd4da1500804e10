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


def test_code_that_ignores_the_cpu_warning_is_killed_a_grace_second_later():
    started = time.monotonic()
    ignoring = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"
    outcome = run(ignoring, language=False, cpu_seconds=1, wall_seconds=15)
    assert outcome.stopped_by == "os:cpu"
    assert "more than 1 s of CPU" in outcome.error
    assert time.monotonic() - started < 15


# What the host makes of a run that exited without answering, from the zygote's report.
# The kernel's own CPU count and rusage's differ: on a loaded machine a run stopped at 1 s
# of CPU was accounted 0.7 s and called "killed from outside".
LOW_ACCOUNTING = 0.4


def ended(signum: int = 0, status: int = 0, cpu_seconds: float = 0.0):
    from registry.sandbox.client import _Reports

    reports = _Reports()
    reports.take({"op": "exit", "signal": signum, "status": status, "cpu_seconds": cpu_seconds})
    return reports


def test_a_run_the_kernel_warned_is_a_cpu_stop_however_little_cpu_rusage_counted():
    from registry.sandbox.client import Limits, _layer
    from registry.sandbox.protocol import CPU_LIMIT_STATUS

    assert _layer(ended(status=CPU_LIMIT_STATUS, cpu_seconds=LOW_ACCOUNTING), Limits(cpu_seconds=1)) == "os:cpu"


def test_a_sigkill_is_the_hard_cpu_limit_only_once_the_cpu_seconds_are_spent():
    import signal

    from registry.sandbox.client import Limits, _layer

    limits = Limits(cpu_seconds=1)
    assert _layer(ended(signal.SIGKILL, cpu_seconds=1.9), limits) == "os:cpu"
    assert _layer(ended(signal.SIGKILL, cpu_seconds=0.05), limits) == "os:killed"
    assert _layer(ended(signal.SIGSEGV), limits) == "crash"
    assert _layer(ended(status=1), limits) == "crash"

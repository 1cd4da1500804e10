"""The test servers' readiness probe: only the started process's own listener counts."""

import os
import subprocess
import sys

from tests.ports import held_port, listens

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_listener_held_by_another_process_is_not_the_started_servers():
    with held_port() as sock:
        port = sock.getsockname()[1]
        child = subprocess.Popen(SLEEP)
        try:
            assert listens(os.getpid(), port)
            assert not listens(child.pid, port)
        finally:
            child.kill()
            child.wait()


def test_a_listener_the_started_server_adopted_is_its_own():
    with held_port() as sock:
        port = sock.getsockname()[1]
        child = subprocess.Popen(SLEEP, pass_fds=(sock.fileno(),))
    try:
        assert listens(child.pid, port)
    finally:
        child.kill()
        child.wait()
    assert not listens(child.pid, port)


def test_a_picked_port_lies_outside_the_range_the_kernel_hands_out():
    from tests.ports import _ephemeral_range, free_port

    low, high = _ephemeral_range()
    assert all(not low <= free_port() <= high for _ in range(20))

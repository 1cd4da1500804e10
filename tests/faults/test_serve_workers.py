"""``python -m eunice.serve --workers N`` (``scripts/run --workers N``): N server processes
on one port and one job cluster, a dead one replaced, all stopped by one SIGTERM."""

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.faults.operator import START_SECONDS, Process, alive, children, environment, free_port, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
STOP_BOUND = 15 + 10 + 5  # the grace, the watchdog's margin, and slack for a busy machine


def servers_under(pid: int) -> list[int]:
    """The supervisor's server children (``eunice.serve --fd``)."""
    found = []
    for child in children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"eunice.serve" in argv and b"--fd" in argv:
            found.append(child)
    return found


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.skipif(
    connection.vendor != "postgresql" or not settings.REDIS_URL,
    reason="several server processes need PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)",
)
def test_two_workers_serve_one_port_a_dead_one_is_replaced_and_sigterm_stops_them_all():
    port = free_port()
    supervisor = Process(
        "serve-workers",
        [sys.executable, "-m", "eunice.serve", "--workers", "2"],
        environment(REDIS_URL=settings.REDIS_URL, PORT=str(port), EUNICE_JOBS="0"),
    )
    try:
        assert wait_for(lambda: len(servers_under(supervisor.pid)) == 2 and healthy(port), START_SECONDS, 0.5), (
            supervisor.log()[-3000:]
        )
        first, second = servers_under(supervisor.pid)

        subprocess.run(["kill", "-KILL", str(first)], check=True)
        replaced = wait_for(lambda: {*servers_under(supervisor.pid)} - {first, second}, START_SECONDS, 0.5)
        assert replaced, "the dead server process was not replaced"
        assert wait_for(lambda: healthy(port), START_SECONDS, 0.5)
        family = children(supervisor.pid)

        began = time.monotonic()
        supervisor.signal(signal.SIGTERM)
        status = supervisor.wait(STOP_BOUND)
    finally:
        supervisor.stop()

    assert status == 0, supervisor.log()[-3000:]
    assert time.monotonic() - began < STOP_BOUND
    assert not [pid for pid in family if alive(pid)], "a server process outlived the supervisor"


def test_several_workers_are_refused_without_postgresql_and_redis(tmp_path):
    env = environment(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", PORT=str(free_port()))
    refused = subprocess.run(
        [sys.executable, "-m", "eunice.serve", "--workers", "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert refused.returncode == 2
    assert "--workers above 1 needs DATABASE_URL (PostgreSQL) and REDIS_URL" in refused.stderr

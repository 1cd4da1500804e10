"""``python -m eunice.serve --workers N`` (``scripts/run --workers N``): N server processes
on one port and one job cluster, a dead one replaced, all stopped by one SIGTERM, and
new connections spread evenly over the processes."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.faults.operator import START_SECONDS, Process, alive, children, environment, free_port, wait_for
from tests.ports import listens

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


def accepted_by(pids: list[int], port: int) -> dict[int, int]:
    """How many connections to ``port`` each process has accepted (holds as an open file).

    A connection still waiting in a listening socket's queue has no file yet (inode 0
    in /proc/net/tcp), so it counts for nobody.
    """
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
            if local_port == port and state == "01" and inode != "0":  # 01: established
                inodes.add(f"socket:[{inode}]")
    counts = {}
    for pid in pids:
        held = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                held += os.readlink(fd) in inodes
        counts[pid] = held
    return counts


def two_servers_answer(supervisor: Process, port: int) -> bool:
    """Both server children are up, and the answer on ``port`` is theirs (another test pass
    may have been given the same free port)."""
    return len(servers_under(supervisor.pid)) == 2 and listens(supervisor.pid, port) and healthy(port)


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
        assert wait_for(lambda: two_servers_answer(supervisor, port), START_SECONDS, 0.5), supervisor.log()[-3000:]
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


CONNECTIONS = 96


@pytest.mark.skipif(
    connection.vendor != "postgresql" or not settings.REDIS_URL,
    reason="several server processes need PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)",
)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel spreads by port on Linux only")
def test_new_connections_are_spread_evenly_even_when_one_process_is_busy_as_they_arrive():
    """Each process has a socket of its own on the port (SO_REUSEPORT) and the kernel hashes
    connections over them, whichever process is free at the moment: of 96 connections opened
    while one of two processes is stopped (a busy event loop, to the kernel), each process
    accepts a quarter at least (the hash's chance of less is about 1 in 3 million). With one
    shared socket the free process accepted them all, so a busy process stayed idle while
    the others took its share (bench/turns.py: 1 % against 52 % CPU)."""
    port = free_port()
    supervisor = Process(
        "serve-workers-spread",
        [sys.executable, "-m", "eunice.serve", "--workers", "2"],
        environment(REDIS_URL=settings.REDIS_URL, PORT=str(port), EUNICE_JOBS="0"),
    )
    opened: list[socket.socket] = []
    try:
        assert wait_for(lambda: two_servers_answer(supervisor, port), START_SECONDS, 0.5), supervisor.log()[-3000:]
        servers = servers_under(supervisor.pid)
        os.kill(servers[0], signal.SIGSTOP)
        try:
            for _ in range(CONNECTIONS):
                opened.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        finally:
            os.kill(servers[0], signal.SIGCONT)

        def all_accepted() -> dict[int, int] | None:
            counts = accepted_by(servers, port)
            return counts if sum(counts.values()) == CONNECTIONS else None

        counts = wait_for(all_accepted, START_SECONDS, 0.2)
    finally:
        for sock in opened:
            sock.close()
        supervisor.stop()

    assert counts, "the server processes did not accept every connection"
    assert min(counts.values()) >= CONNECTIONS // 4, counts

"""``eunice.serve --workers N``: N server processes on one port, and one job cluster.

The supervisor binds the listening sockets itself and hands one to each of N
children (``python -m eunice.serve --fd FD``, each uvicorn with its own event
loop, MCP sessions and sandbox). On Linux each child gets a socket of its own,
all bound to the one port with SO_REUSEPORT, and the kernel hashes each new
connection to one of them: an even spread. With one shared socket (elsewhere)
whichever process wakes first accepts everything waiting, so the busiest
process takes the most and an idle one may get almost nothing (bench/turns.py,
2026-12-05: 1 % against 52 % CPU).

It starts one job cluster (``manage.py jobs``) unless ``EUNICE_JOBS=0``. A child
that dies is started again on the same socket; SIGTERM or SIGINT is passed to
every child, which stops as one server process does (docs/operations.md), and
the supervisor waits for them within the same bound.

Several processes share state only through PostgreSQL and Redis (the channel
layer, the cache, the job broker and the process bus), so the supervisor
refuses to start without both.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from eunice.serve import ROOT, WATCHDOG_MARGIN, JobCluster

logger = logging.getLogger("eunice.serve")

RESTART_PAUSE = 1.0  # seconds before a dead child is started again


def refusal() -> str:
    """Why several processes cannot run on this configuration, or ""."""
    from django.conf import settings

    missing = []
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        missing.append("DATABASE_URL (PostgreSQL)")
    if not settings.REDIS_URL:
        missing.append("REDIS_URL")
    if not missing:
        return ""
    return f"--workers above 1 needs {' and '.join(missing)}: processes share state only through them"


BACKLOG = 4096


def spreads_by_port() -> bool:
    """Whether the kernel balances connections over sockets sharing a port (Linux's SO_REUSEPORT).

    BSD and macOS accept the option but do not balance by it; there the children share one socket.
    """
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def listeners(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` listening sockets on ``host:port``, one per child (inherited, so no child races for the port).

    Where the kernel spreads by port they are ``count`` sockets with SO_REUSEPORT;
    elsewhere one socket, ``count`` times. Port 0 picks a free port for all of them.
    Raises OSError (EADDRINUSE) when anything already listens on the port: with
    SO_REUSEPORT a second Eunice started by the same user could otherwise join it.
    """
    if not spreads_by_port() or count == 1:
        return [_bind(host, port, reuse_port=False)] * count
    if port:
        _bind(host, port, reuse_port=False, listen=False).close()  # anything already there: EADDRINUSE here
    first = _bind(host, port, reuse_port=True)
    port = first.getsockname()[1]
    return [first, *(_bind(host, port, reuse_port=True) for _ in range(count - 1))]


def _bind(host: str, port: int, *, reuse_port: bool, listen: bool = True) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind((host, port))
        if listen:
            listener.listen(BACKLOG)
    except OSError:
        listener.close()
        raise
    listener.set_inheritable(True)
    return listener


class Supervisor:
    """N ``eunice.serve --fd`` children and a job cluster, kept running until told to stop."""

    def __init__(self, workers: int, sockets: list[socket.socket], *, jobs: bool) -> None:
        # The supervisor keeps every socket open: connections waiting on a dead child's
        # socket are served by the child started in its place.
        self.workers, self.sockets = workers, sockets
        self.children: list[subprocess.Popen | None] = [None] * workers
        self.cluster = JobCluster() if jobs else None
        self.stopping = threading.Event()

    def _spawn(self, index: int) -> None:
        fd = self.sockets[index].fileno()
        env = {**os.environ, "EUNICE_JOBS": "0", "EUNICE_WORKER_INDEX": str(index)}
        self.children[index] = subprocess.Popen(
            [sys.executable, "-m", "eunice.serve", "--fd", str(fd)], cwd=ROOT, env=env, pass_fds=(fd,)
        )

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.set())
        for index in range(self.workers):
            self._spawn(index)
        logger.info("serving with %d server processes (pids %s)", self.workers, [c.pid for c in self.children if c])
        while not self.stopping.wait(0.5):
            for index, child in enumerate(self.children):
                if child is not None and child.poll() is not None:
                    logger.warning("server process %d exited (%s); starting another", child.pid, child.returncode)
                    time.sleep(RESTART_PAUSE)
                    self._spawn(index)
        return self.stop()

    def stop(self) -> int:
        """SIGTERM to every child and the cluster, each draining as one server does; 0 when all stopped in time."""
        from django.conf import settings

        deadline = time.monotonic() + settings.EUNICE_SHUTDOWN_GRACE_SECONDS + WATCHDOG_MARGIN
        running = [child for child in self.children if child is not None and child.poll() is None]
        for child in running:
            child.send_signal(signal.SIGTERM)
        if self.cluster is not None:
            self.cluster.terminate()
        status = 0
        for child in running:
            try:
                child.wait(timeout=max(0.5, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.error("server process %d did not stop in time; killing it", child.pid)
                child.kill()
                child.wait(timeout=5)
                status = 1
        if self.cluster is not None:
            self.cluster.stop(deadline)
        for listener in {*self.sockets}:
            listener.close()
        return status

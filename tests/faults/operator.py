"""Real processes for the operator's fault tests: the server, the job cluster, a Redis of their own.

Every wait is bounded; every process a test starts is stopped (SIGKILL of its
process group at worst) when the test ends, whatever it asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.test import Client
from websockets.sync.client import connect

from tests.ports import descendants as children
from tests.ports import free_port, listens
from tests.test_background_jobs import database_url

__all__ = ["children", "free_port"]  # re-exported for the fault tests

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "var" / "faults"
START_SECONDS = 120  # generous: start-up on a loaded shared machine has taken over 30 s
REDIS_SERVER = shutil.which("redis-server")


def wait_for(predicate: Callable[[], object], timeout: float, interval: float = 0.1):
    """``predicate()``'s first truthy value within ``timeout`` seconds, else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def environment(**extra: str) -> dict[str, str]:
    """A server or cluster on the test's database, with the test's signing key, offline."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
        "ALLOWED_HOSTS": "127.0.0.1",
        "EUNICE_PRELOAD_TOOL_SEARCH": "0",
        "EUNICE_LOG_FLUSH_SECONDS": "0",
        "EUNICE_SANDBOX_SCRATCH": os.environ.get("EUNICE_SANDBOX_SCRATCH", "/tmp/eunice-sandbox"),
    }
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EUNICE_DEFAULT_MODEL", "REDIS_URL"):
        env.pop(name, None)
    env.update(extra)
    return env


class Process:
    """A child in its own process group, its output in var/faults/<name>.log."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log_path = LOGS / f"{name}.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.pid = self.popen.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """However the test went: the whole group, then anything that escaped it."""
        leftovers = children(self.pid) if self.popen.poll() is None else []
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.popen.poll() is None:
                try:
                    os.killpg(self.pid, sig)
                except ProcessLookupError:
                    break
                self.wait(10)
        for pid in leftovers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        self._log.close()


class Server(Process):
    """``python -m eunice.serve`` (what scripts/run execs) on a free port, with its job cluster."""

    def __init__(self, env: dict[str, str], name: str = "server") -> None:
        self.port = free_port()
        super().__init__(name, [sys.executable, "-m", "eunice.serve"], {**env, "PORT": str(self.port)})
        started = wait_for(self._listening, START_SECONDS, 0.2)
        if not started:
            self.stop()
            raise AssertionError(f"the server did not start:\n{self.log()[-3000:]}")

    def _listening(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"the server exited at start-up:\n{self.log()[-3000:]}")
        return listens(self.pid, self.port)  # ours: another test pass may hold a port it was given

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, cookie: str = "") -> tuple[int, dict | str]:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self.url + path, headers={"Cookie": cookie} if cookie else {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    @contextmanager
    def socket(self, conversation_id: str, cookie: str):
        with connect(
            f"ws://127.0.0.1:{self.port}/ws/conversations/{conversation_id}/",
            additional_headers={"Cookie": cookie, "Origin": self.url},
            open_timeout=30,
            max_size=None,
        ) as ws:
            yield ws


def cookie_for(user) -> str:  # noqa: ANN001
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def receive_json(ws, timeout: float = 30) -> dict:  # noqa: ANN001
    return json.loads(ws.recv(timeout=timeout))


def receive_until(ws, kind: str, timeout: float = 60) -> list[dict]:  # noqa: ANN001
    """Every frame up to and including the first of type ``kind``."""
    deadline, frames = time.monotonic() + timeout, []
    while True:
        frames.append(receive_json(ws, max(0.1, deadline - time.monotonic())))
        if frames[-1].get("type") == kind:
            return frames


class Redis(Process):
    """A redis-server of the test's own on a free port, no persistence: stopped and started at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self._start()

    def _start(self) -> None:
        super().__init__(
            f"redis-{self.port}",
            [REDIS_SERVER, "--port", str(self.port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
            dict(os.environ),
        )
        if not wait_for(self._answers, 30):
            raise AssertionError(f"redis-server did not start:\n{self.log()}")

    def _answers(self) -> bool:
        if not listens(self.pid, self.port):
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def down(self) -> None:
        self.stop()

    def running(self) -> bool:
        return self.popen.poll() is None

    def up(self) -> None:
        self._start()

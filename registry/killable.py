"""Where a synchronous tool that may hang runs: a child process, killed when its call overruns.

A Python thread cannot be killed (registry.workers writes a hung one off); a process
can. A tool declared ``killable`` (``Tool(killable=True)``) has its handler run in
one of these children, started with ``python -m registry.killable_child``
(Django set up, on the parent's database). The tool worker thread that would have
run the handler sends the call instead and waits for the answer; past the tool's
timeout, or when the caller cancels, the child's whole process group is
SIGKILLed, the call ends with ``TimeoutError`` (or ``Cancelled``) saying so, and
the next call gets another child. So a killable tool's hung call keeps neither a
thread nor its slots past its timeout.

What crosses to the child is the call's inputs and the plain fields of its
ToolContext (tenant, user, conversation, mode, capabilities, …): not its ports
(progress, the conversation's datasets and catalog, call_tool, questions). Only a
tool that needs none of them may be declared killable, and its envelope must
pickle. A child costs a Django start-up (≈ 3 s of CPU), paid once: children are
reused, started at the server's start-up (``preload``) and a spare is started
when one is killed; a call that finds none ready waits for one within its own
timeout. ``EUNICE_KILLABLE_PROCESSES`` idle children are kept.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger("eunice.registry")

ROOT = Path(__file__).resolve().parent.parent
START_SECONDS = 60.0  # a child's Django start-up on a loaded machine; not counted in the call's timeout
READY = b"R"
HEADER = struct.Struct("!I")
MAX_REPLY_BYTES = 64 << 20  # an envelope larger than this is refused, not read
POLL_SECONDS = 0.05  # how often a waiting call looks at its cancel flag
# The ToolContext fields that cross to the child: plain values, no ports.
PLAIN_FIELDS = (
    "tenant_id",
    "user_id",
    "conversation_id",
    "namespace_id",
    "mode",
    "capabilities",
    "tool_use_id",
    "depth",
    "approval_id",
    "tool_name",
    "reasoning",
)


class Killed(Exception):
    """The call's child was killed (timeout or cancel) or died; the message says which."""


class _Child:
    """One ``registry.killable_child`` process in its own process group."""

    def __init__(self, env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "registry.killable_child"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a handler's own subprocesses die with it
        )
        self.ready = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read(self, size: int, deadline: float, stop: threading.Event | None) -> bytes:
        assert self.popen.stdout is not None
        fd, data = self.popen.stdout.fileno(), b""
        while len(data) < size:
            if stop is not None and stop.is_set():
                raise Killed("cancelled")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            readable, _, _ = select.select([fd], [], [], min(left, POLL_SECONDS))
            if readable:
                chunk = os.read(fd, size - len(data))
                if not chunk:
                    code = self.popen.wait(5)
                    raise Killed(f"its process exited with code {code} during the call")
                data += chunk
        return data

    def poll_ready(self) -> bool:
        """Whether the child has said it is ready (without waiting)."""
        if not self.ready:
            assert self.popen.stdout is not None
            if select.select([self.popen.stdout.fileno()], [], [], 0)[0]:
                try:
                    self.wait_ready(None)
                except Killed:  # it exited instead: not ready, and never will be
                    return False
        return self.ready

    def wait_ready(self, stop: threading.Event | None) -> None:
        if not self.ready:
            try:
                if self._read(1, time.monotonic() + START_SECONDS, stop) != READY:
                    raise Killed("its process started badly")
            except TimeoutError:
                raise Killed(f"its process did not start within {START_SECONDS:g} s") from None
            self.ready = True

    def call(self, request: tuple, timeout: float, stop: threading.Event | None) -> tuple[str, Any]:
        assert self.popen.stdin is not None
        body = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.popen.stdin.write(HEADER.pack(len(body)) + body)
            self.popen.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Killed("its process had exited before the call") from None
        deadline = time.monotonic() + timeout
        (size,) = HEADER.unpack(self._read(HEADER.size, deadline, stop))
        if size > MAX_REPLY_BYTES:
            raise Killed(f"its answer was larger than {MAX_REPLY_BYTES >> 20} MB")
        return pickle.loads(self._read(size, deadline, stop))  # noqa: S301 (our own child's reply)

    def kill(self) -> None:
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(10)
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream is not None:
                stream.close()


class KillableProcesses:
    """The children killable tools run in; ``idle`` of them kept between calls."""

    def __init__(self, *, idle: int) -> None:
        self._keep = idle
        self._idle: list[_Child] = []
        self._lock = threading.Lock()
        self.killed = 0  # children killed since the start (a timeout, a cancel, a death)

    def _env(self) -> dict[str, str]:
        from django.conf import settings

        # The parent's databases as configured now (a test's database, a DATABASE_URL):
        # the child connects to the same ones, whatever its own settings would say.
        return {**os.environ, "EUNICE_KILLABLE_DATABASES": json.dumps(settings.DATABASES, default=str)}

    def _take(self) -> _Child:
        """An idle child, a ready one first (a spare may still be starting); else a new one."""
        with self._lock:
            self._idle = [child for child in self._idle if child.popen.poll() is None]
            for child in self._idle:
                if child.poll_ready():
                    self._idle.remove(child)
                    return child
            if self._idle:
                return self._idle.pop(0)
        return _Child(self._env())

    def _give_back(self, child: _Child) -> None:
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(child)
                return
        child.kill()

    def _spare(self) -> None:
        # After a kill: the next call should not wait for a Django start-up.
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(_Child(self._env()))

    def run(
        self, path: str, name: str, inputs: dict, context: Any, timeout: float, stop: threading.Event | None
    ) -> Any:
        """``path``'s handler for tool ``name`` on ``inputs`` in a child; its envelope.

        Raises TimeoutError past ``timeout`` seconds of the call (the child killed),
        ``Killed`` when the call was cancelled or the child died, and what the handler
        raised (re-raised here)."""
        child = self._take()
        try:
            child.wait_ready(stop)
            kind, value = child.call((path, name, inputs, plain_fields(context)), timeout, stop)
        except TimeoutError:
            self._kill(child, "its timeout")
            raise TimeoutError(f"timed out after {timeout:g} s; its process was killed") from None
        except Killed as exc:
            self._kill(child, str(exc))
            raise
        except BaseException:
            self._kill(child, "an error reading its answer")
            raise
        self._give_back(child)
        if kind == "raised":
            raise value
        return value

    def _kill(self, child: _Child, why: str) -> None:
        logger.warning("killable tool process %d killed (%s)", child.pid, why)
        child.kill()
        with self._lock:
            self.killed += 1
        self._spare()

    def warm(self, wait: bool = False) -> None:
        """Start the idle children now (a server's start-up), not at the first call; ``wait``:
        until they are ready."""
        with self._lock:
            while len(self._idle) < self._keep:
                self._idle.append(_Child(self._env()))
            idle = list(self._idle)
        if wait:
            for child in idle:
                child.wait_ready(None)

    def pids(self) -> list[int]:
        """The idle children's process ids (for tests and /health)."""
        with self._lock:
            return [child.pid for child in self._idle]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.kill()


def plain_fields(context: Any) -> dict[str, Any]:
    """What of a ToolContext crosses to the child."""
    return {name: getattr(context, name) for name in PLAIN_FIELDS}


def preload() -> None:
    """At a server's start-up: the children, when a killable tool of this deployment can run
    (its availability check passes), so that its first call does not wait for their Django start-up."""
    from registry.handlers import import_handler
    from registry.registry import get_registry
    from registry.system import system_catalog

    for entry in system_catalog().entries():
        if entry.get("killable"):
            check = getattr(import_handler(entry["handler_path"]), "__requires__", None)
            if check is None or check() is None:
                get_registry().killable_processes().warm()
                return

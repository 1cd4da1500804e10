"""The host's side of the sandbox: start the zygote, hand it runs, serve call_tool.

The zygote is started with ``python -I`` and a minimal environment, so no run
can ever see Django's settings, environment or open files. This module has no
Django import; ``registry.sandbox.service`` wires it to settings and the registry.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eunice.jsonlimits import JSONTooDeep, loads_bounded
from registry.sandbox.protocol import FrameTooLarge, PeerClosed, recv_frame, send_frame, send_json

logger = logging.getLogger("eunice.sandbox")

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_ZYGOTE = str(Path(__file__).with_name("zygote.py"))
_MINIMAL_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_MAX_THREADS": "1",
}
_STATUS_GRACE_SECONDS = 2.0
_SIGNALS = {signal.SIGXCPU: "os:cpu", signal.SIGKILL: "os:cpu", signal.SIGSEGV: "crash"}


@dataclass(frozen=True, slots=True)
class Limits:
    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 1 << 30
    result_bytes: int = 1 << 20
    file_bytes: int = 16 << 20
    max_tool_calls: int = 20


@dataclass(slots=True)
class RunOutcome:
    """What a run produced: an answer (data) or an error, and which layer stopped it."""

    ok: bool
    answer: dict[str, Any] | None = None
    error: str = ""
    stopped_by: str = ""
    layers: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    wall_ms: float = 0.0


class SandboxUnavailable(Exception):
    """The zygote could not be started or died."""


CallTool = Callable[[str, dict], str]


class Zygote:
    """One long-lived zygote process and the demultiplexer of its reports."""

    def __init__(self, scratch_root: str, start_timeout: float = 60.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**_MINIMAL_ENV, "EUNICE_SANDBOX_PATH": _PACKAGE_ROOT,
               "EUNICE_SANDBOX_SCRATCH": scratch_root,
               "EUNICE_SANDBOX_CONTROL_FD": str(theirs.fileno())}
        self.process = subprocess.Popen(
            [sys.executable, "-I", _ZYGOTE], env=env, cwd="/", pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )
        theirs.close()
        self.control = ours
        self.control.settimeout(start_timeout)
        try:
            self.capabilities: dict[str, Any] = json.loads(self.control.recv(1 << 16) or b"{}")
        except (TimeoutError, json.JSONDecodeError) as exc:
            self.close()
            raise SandboxUnavailable(f"the sandbox zygote did not start: {exc}") from None
        if self.capabilities.get("op") != "ready":
            self.close()
            raise SandboxUnavailable("the sandbox zygote exited while starting (see the server log)")
        self.control.settimeout(None)
        self._waiters: dict[str, queue.SimpleQueue] = {}
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_reports, name="sandbox-zygote", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self.control.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=5)

    def _read_reports(self) -> None:
        while True:
            try:
                packet = self.control.recv(1 << 16)
            except OSError:
                packet = b""
            if not packet:
                for waiter in list(self._waiters.values()):
                    waiter.put({"op": "zygote_gone"})
                return
            report = json.loads(packet)
            waiter = self._waiters.get(report.get("id", ""))
            if waiter is not None:
                waiter.put(report)

    def run(
        self,
        code: str,
        inputs: dict,
        datasets: dict[str, Any],
        limits: Limits,
        call_tool: CallTool,
        *,
        language: bool = True,
        want_frames: bool = False,
        cancelled: Callable[[], bool] | None = None,
    ) -> RunOutcome:
        """Run ``code`` in a fresh jailed child; never raises for what the code does.

        With ``want_frames`` the answer also carries the result table and every
        DataFrame the code put into ``frames`` as JSON data (see runner.frame_payload).
        ``cancelled`` is polled every 50 ms while the run works; once it says so
        the child is killed (not merely abandoned) and the outcome says why.
        """
        started = time.perf_counter()
        run_id = uuid.uuid4().hex
        reports: queue.SimpleQueue = queue.SimpleQueue()
        self._waiters[run_id] = reports
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            request = {"id": run_id, "limits": _limits_dict(limits)}
            with self._lock:
                socket.send_fds(self.control, [json.dumps(request).encode()], [child.fileno()])
            child.close()
            outcome = self._converse(
                host, code, inputs, datasets, limits, call_tool, language, reports, run_id, cancelled,
                want_frames,
            )
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            if not self.alive:
                raise SandboxUnavailable("the sandbox zygote has stopped") from None
            outcome = RunOutcome(ok=False, error=f"the run's channel failed: {exc.strerror or exc}", stopped_by="crash")
        finally:
            host.close()
            self._waiters.pop(run_id, None)
        outcome.wall_ms = (time.perf_counter() - started) * 1000.0
        return outcome

    def _converse(self, host: socket.socket, code: str, inputs: dict, datasets: dict, limits: Limits,
                  call_tool: CallTool, language: bool, reports: queue.SimpleQueue, run_id: str,
                  cancelled: Callable[[], bool] | None, want_frames: bool = False) -> RunOutcome:
        deadline = time.monotonic() + limits.wall_seconds + 1.0
        send_json(host, {"code": code, "inputs": inputs, "language": language, "has_data": bool(datasets),
                         "want_frames": want_frames})
        if datasets:
            send_frame(host, pickle.dumps(datasets, protocol=pickle.HIGHEST_PROTOCOL))
        cap = limits.result_bytes + (64 << 10)
        while True:
            if cancelled is not None and not _readable(host, deadline):
                if cancelled():
                    with self._lock:
                        self.control.send(json.dumps({"cancel": run_id}).encode())
                    return RunOutcome(ok=False, stopped_by="cancelled", error="cancelled by the user; the run was killed")
                if time.monotonic() < deadline:
                    continue
            host.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                message = loads_bounded(recv_frame(host, cap), what="the result")
            except FrameTooLarge as exc:
                return RunOutcome(ok=False, stopped_by="result_cap",
                                  error=f"the result is {exc.size:,} bytes; the limit is {limits.result_bytes:,}")
            except JSONTooDeep as exc:  # the run's own code chose the shape; parsing it must not recurse
                return RunOutcome(ok=False, stopped_by="result_depth", error=str(exc))
            except (PeerClosed, TimeoutError, ConnectionResetError):
                return _died(reports, limits)
            if message.get("op") == "call_tool":
                send_json(host, {"text": call_tool(message.get("name", ""), message.get("inputs") or {})})
                continue
            return RunOutcome(
                ok=bool(message.get("ok")), answer=message.get("answer"),
                error=str(message.get("error", "")), stopped_by=str(message.get("stopped_by", "")),
                layers=message.get("layers") or {}, tool_calls=int(message.get("tool_calls", 0)),
            )


def _readable(host: socket.socket, deadline: float) -> bool:
    """Whether the child has written, waiting at most 50 ms (so a cancel is seen quickly)."""
    ready, _, _ = select.select([host], [], [], min(0.05, max(0.0, deadline - time.monotonic())))
    return bool(ready)


def _died(reports: queue.SimpleQueue, limits: Limits) -> RunOutcome:
    """The run ended without answering: ask the zygote how."""
    killed_for_wall = False
    end = time.monotonic() + limits.wall_seconds + _STATUS_GRACE_SECONDS
    while time.monotonic() < end:
        try:
            report = reports.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            break
        if report.get("op") == "killed":
            killed_for_wall = True
        elif report.get("op") in ("exit", "zygote_gone"):
            if killed_for_wall:
                break
            layer = _SIGNALS.get(report.get("signal", 0), "crash")
            what = f"used more than {limits.cpu_seconds} s of CPU" if layer == "os:cpu" else "crashed"
            return RunOutcome(ok=False, stopped_by=layer, error=f"the tool {what} and was stopped")
    if killed_for_wall:
        return RunOutcome(ok=False, stopped_by="supervisor:wall",
                          error=f"the tool ran longer than {limits.wall_seconds:g} s and was stopped")
    return RunOutcome(ok=False, stopped_by="crash", error="the tool stopped without an answer")


def _limits_dict(limits: Limits) -> dict[str, Any]:
    return dataclasses.asdict(limits)


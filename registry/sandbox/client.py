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
from registry.sandbox.protocol import (
    CPU_LIMIT_STATUS,
    FrameTooLarge,
    PeerClosed,
    ProtocolError,
    check_run_frame,
    recv_frame,
    send_frame,
    send_json,
)

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
_SIGNALS = {signal.SIGXCPU: "os:cpu", signal.SIGSEGV: "crash"}
# A run reaching its CPU seconds exits with CPU_LIMIT_STATUS on the kernel's
# SIGXCPU; one that ignored it is SIGKILLed at the hard limit, a grace second later. A
# SIGKILL the zygote did not send is that hard limit only if the run's accounted CPU
# reaches this share of its CPU seconds: rusage and RLIMIT_CPU count on different clocks,
# and on a loaded machine rusage has read a quarter and more below the limit's own count
# (which is why the warning, not the accounted time, names an ordinary CPU stop).
_CPU_LIMIT_SHARE = 0.75


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
    """What a run produced: an answer (data) or an error, and which layer stopped it.

    ``layers`` and ``tool_calls`` are the host's and the zygote's
    account of the run, never the run's own.
    """

    ok: bool
    answer: dict[str, Any] | None = None
    error: str = ""
    stopped_by: str = ""
    layers: dict[str, Any] = field(default_factory=dict)
    tool_calls: int = 0
    wall_ms: float = 0.0


class _Reports:
    """What the zygote says about one run, filled in by the reader thread."""

    def __init__(self, on_exit: Callable[[float], None] | None = None) -> None:
        self.on_exit = on_exit
        self.started = threading.Event()
        self.ended = threading.Event()
        self.layers: dict[str, Any] = {}
        self.killed = ""
        self.signal = 0
        self.status = 0
        self.cpu_seconds = 0.0
        self.refused = ""

    def take(self, report: dict[str, Any]) -> None:
        op = report.get("op")
        if op == "started":
            self.layers = dict(report.get("layers") or {})
            self.started.set()
        elif op == "killed":
            self.killed = str(report.get("reason", ""))
        elif op == "exit":
            self.signal = int(report.get("signal", 0))
            self.status = int(report.get("status", 0))
            self.cpu_seconds = float(report.get("cpu_seconds", 0.0))
            self.started.set()
            self.ended.set()
            if self.on_exit is not None:
                self.on_exit(self.cpu_seconds)
        elif op in ("refused", "zygote_gone"):
            self.refused = str(report.get("reason", "the sandbox zygote has stopped"))
            self.started.set()
            self.ended.set()


class SandboxUnavailable(Exception):
    """The zygote could not be started or died."""


CallTool = Callable[[str, dict], str]
# A call whose result the run takes as data: {"ok": true, "data": ...} or {"ok": false, "message": ...}.
CallForData = Callable[[str, dict], dict]


class Zygote:
    """One long-lived zygote process and the demultiplexer of its reports."""

    def __init__(self, scratch_root: str, start_timeout: float = 60.0) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            **_MINIMAL_ENV,
            "EUNICE_SANDBOX_PATH": _PACKAGE_ROOT,
            "EUNICE_SANDBOX_SCRATCH": scratch_root,
            "EUNICE_SANDBOX_CONTROL_FD": str(theirs.fileno()),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-I", _ZYGOTE],
            env=env,
            cwd="/",
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
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
        self._waiters: dict[str, _Reports] = {}
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
                for pending in list(self._waiters.values()):
                    pending.take({"op": "zygote_gone"})
                return
            report = json.loads(packet)
            run_id = report.get("id", "")
            waiter = (
                self._waiters.pop(run_id, None)
                if report.get("op") in ("exit", "refused")
                else self._waiters.get(run_id)
            )
            if waiter is not None:
                waiter.take(report)

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
        on_exit: Callable[[float], None] | None = None,
        call_for_data: CallForData | None = None,
    ) -> RunOutcome:
        """Run ``code`` in a fresh jailed child; never raises for what the code does.

        The host enforces the limits itself: it counts ``call_tool`` requests and
        ends the run past ``limits.max_tool_calls``, checks every frame
        (protocol.check_run_frame) and ends the run on the first bad one, and
        stops waiting (and has the run killed) after the wall-clock limit.
        With ``want_frames`` the answer also carries the result table and every
        DataFrame the code put into ``frames`` as JSON data (see runner.frame_payload).
        ``cancelled`` is polled every 50 ms while the run works; once it says so
        the child is killed (not merely abandoned) and the outcome says why.
        ``on_exit(cpu_seconds)`` is called (on another thread) once the zygote has
        reaped the run; the answer does not wait for that. ``call_for_data`` serves
        the run's ``call`` (a tool's result as data); without it ``call`` is refused.
        Raises SandboxUnavailable when the zygote has stopped.
        """
        started = time.perf_counter()
        run_id = uuid.uuid4().hex
        reports = _Reports(on_exit)
        self._waiters[run_id] = reports
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        conversation = _Conversation(self, host, run_id, reports, limits, call_tool, cancelled, call_for_data)
        try:
            request = {"id": run_id, "limits": _limits_dict(limits)}
            with self._lock:
                socket.send_fds(self.control, [json.dumps(request).encode()], [child.fileno()])
            child.close()
            outcome = conversation.hold(code, inputs, datasets, language, want_frames)
        except OSError:
            if not self.alive:
                raise SandboxUnavailable("the sandbox zygote has stopped") from None
            outcome = conversation.died()  # the run went away mid-conversation: the zygote says how
        finally:
            host.close()
        if not reports.ended.is_set():
            self.kill(run_id)  # whatever the run does after answering, it does no more
        reports.started.wait(_STATUS_GRACE_SECONDS)
        if reports.refused and outcome.stopped_by in ("crash", ""):
            outcome = RunOutcome(
                ok=False, stopped_by="unavailable", error=f"the sandbox refused the run: {reports.refused}"
            )
        outcome.layers = {**reports.layers, "language": language} if reports.layers else {}
        outcome.tool_calls = conversation.calls
        outcome.wall_ms = (time.perf_counter() - started) * 1000.0
        return outcome

    def kill(self, run_id: str) -> None:
        """Have the zygote kill the run now (it reports ``killed`` and then ``exit``)."""
        try:
            with self._lock:
                self.control.send(json.dumps({"cancel": run_id}).encode())
        except OSError:  # the zygote is gone, and its runs with it
            pass


class _Conversation:
    """The host's side of one run's socket: requests in, answers out, limits held."""

    def __init__(
        self,
        zygote: Zygote,
        host: socket.socket,
        run_id: str,
        reports: _Reports,
        limits: Limits,
        call_tool: CallTool,
        cancelled: Callable[[], bool] | None,
        call_for_data: CallForData | None = None,
    ) -> None:
        self.zygote, self.host, self.run_id, self.reports = zygote, host, run_id, reports
        self.limits, self.call_tool, self.cancelled = limits, call_tool, cancelled
        self.call_for_data = call_for_data
        self.calls = 0

    def hold(self, code: str, inputs: dict, datasets: dict, language: bool, want_frames: bool) -> RunOutcome:
        limits = self.limits
        deadline = time.monotonic() + limits.wall_seconds + 1.0
        send_json(
            self.host,
            {
                "code": code,
                "inputs": inputs,
                "language": language,
                "has_data": bool(datasets),
                "want_frames": want_frames,
            },
        )
        if datasets:
            send_frame(self.host, pickle.dumps(datasets, protocol=pickle.HIGHEST_PROTOCOL))
        cap = limits.result_bytes + (64 << 10)
        while True:
            if not _readable(self.host, deadline):
                if self.reports.refused:  # the zygote died, and the run with it
                    return RunOutcome(
                        ok=False,
                        stopped_by="unavailable",
                        error=f"the sandbox stopped during the run: {self.reports.refused}",
                    )
                if self.cancelled is not None and self.cancelled():
                    self.zygote.kill(self.run_id)
                    return RunOutcome(
                        ok=False, stopped_by="cancelled", error="cancelled by the user; the run was killed"
                    )
                if time.monotonic() < deadline:
                    continue
                return self._stop(
                    "supervisor:wall", f"the tool ran longer than {limits.wall_seconds:g} s and was stopped"
                )
            self.host.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                raw = recv_frame(self.host, cap)
                message = check_run_frame(loads_bounded(raw, what="the result", parse_constant=_no_constant), len(raw))
            except FrameTooLarge as exc:
                return self._stop(
                    "result_cap", f"the result is {exc.size:,} bytes; the limit is {limits.result_bytes:,}"
                )
            except JSONTooDeep as exc:  # the run's own code chose the shape; parsing it must not recurse
                return self._stop("result_depth", str(exc))
            except (ValueError, ProtocolError) as exc:
                return self._stop("host:protocol", f"the tool broke the sandbox protocol: {_protocol_reason(exc)}")
            except (PeerClosed, TimeoutError, ConnectionResetError):
                return self.died()
            if message["op"] == "result":
                return self._result(message)
            self.calls += 1
            if self.calls > limits.max_tool_calls:
                self.calls -= 1
                return self._stop("host:calls", f"the tool made more than {limits.max_tool_calls} call_tool calls")
            send_json(self.host, self._answer(message))

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        """The reply to a checked call_tool frame: the tool's text, or its data."""
        if not message.get("structured"):
            return {"text": self.call_tool(message["name"], message["inputs"])}
        if self.call_for_data is None:
            return {"ok": False, "message": "call() is not available in this run; use call_tool()"}
        return self.call_for_data(message["name"], message["inputs"])

    def _result(self, message: dict[str, Any]) -> RunOutcome:
        return RunOutcome(
            ok=message["ok"],
            answer=message.get("answer"),
            error=message.get("error", ""),
            stopped_by=message.get("stopped_by", ""),
        )

    def _stop(self, stopped_by: str, error: str) -> RunOutcome:
        """End the run for a limit the host enforces."""
        self.zygote.kill(self.run_id)
        return RunOutcome(ok=False, stopped_by=stopped_by, error=error)

    def died(self) -> RunOutcome:
        """The run ended without answering: how, the zygote says."""
        reports, limits = self.reports, self.limits
        reports.ended.wait(limits.wall_seconds + _STATUS_GRACE_SECONDS)
        if reports.killed == "wall":
            return RunOutcome(
                ok=False,
                stopped_by="supervisor:wall",
                error=f"the tool ran longer than {limits.wall_seconds:g} s and was stopped",
            )
        if reports.killed == "cancel":
            return RunOutcome(ok=False, stopped_by="cancelled", error="cancelled by the user; the run was killed")
        layer = _layer(reports, limits) if reports.ended.is_set() else "crash"
        if layer == "os:killed":
            return RunOutcome(
                ok=False,
                stopped_by="os:killed",
                error="the tool's process was killed from outside the sandbox (the OOM killer or an operator)",
            )
        if layer == "os:cpu":
            return RunOutcome(
                ok=False,
                stopped_by=layer,
                error=f"the tool used more than {limits.cpu_seconds} s of CPU and was stopped",
            )
        if reports.signal:
            return RunOutcome(ok=False, stopped_by=layer, error="the tool crashed and was stopped")
        return RunOutcome(ok=False, stopped_by="crash", error="the tool stopped without an answer")


def _layer(reports: _Reports, limits: Limits) -> str:
    """Which layer ended a run that exited without answering, from the zygote's report."""
    if reports.status == CPU_LIMIT_STATUS:
        return "os:cpu"
    if reports.signal == signal.SIGKILL:
        return "os:cpu" if reports.cpu_seconds >= limits.cpu_seconds * _CPU_LIMIT_SHARE else "os:killed"
    return _SIGNALS.get(reports.signal, "crash")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _protocol_reason(exc: Exception) -> str:
    return str(exc) if isinstance(exc, ProtocolError) else f"a frame is not JSON ({type(exc).__name__})"


def _readable(host: socket.socket, deadline: float) -> bool:
    """Whether the child has written, waiting at most 50 ms (so a cancel is seen quickly)."""
    ready, _, _ = select.select([host], [], [], min(0.05, max(0.0, deadline - time.monotonic())))
    return bool(ready)


def _limits_dict(limits: Limits) -> dict[str, Any]:
    return dataclasses.asdict(limits)

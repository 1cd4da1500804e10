"""The zygote: a pre-warmed parent that forks one child per run.

Started by the host with a minimal environment (``python -I``, no Django, no
secrets), it imports pandas, numpy and RestrictedPython, exercises the code
paths tools use (so nothing is lazily imported after lockdown), moves itself
(when it is root) into a mount namespace of its own whose root holds only the
Python installation, /proc and the scratch directories, and into an empty
network namespace, and then serves requests on
the control socket named by EUNICE_SANDBOX_CONTROL_FD: each request carries a socket for the run.

Each run is forked into a PID namespace of its own and given a uid and gid of
its own from a reserved range (a slot, taken back when the run is reaped).
Before the run executes any tool code it reports the layers it set up; the
zygote checks them against the kernel's view (``/proc/<pid>``), lets the run
continue and tells the host ``{"op": "started", "layers"}``. It reaps
children, kills runs past their wall-clock limit, wipes their scratch
directories and reports ``{"op": "exit", "id", "signal", "status", "cpu_seconds"}``.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import sys
import time
from dataclasses import dataclass

sys.path.insert(0, os.environ["EUNICE_SANDBOX_PATH"])

# Compilers the environment holds for the host (shap needs numba) that no run may reach:
# pandas hands a function to numba when asked for engine="numba", on methods the policy
# does not vet one by one. A None entry makes every import of them fail here, in the
# zygote and each run it forks, as if they were not installed.
NEVER_IMPORTED = ("numba", "llvmlite")
for _name in NEVER_IMPORTED:
    sys.modules[_name] = None  # type: ignore[assignment]

from registry.sandbox import oslayer, warmup  # noqa: E402
from registry.sandbox.child import run_child  # noqa: E402

_SETUP_REPORT_BYTES = 1 << 12


@dataclass(slots=True)
class _Run:
    run_id: str
    deadline: float
    scratch: str
    slot: int
    limits: dict
    setup: socket.socket | None  # until the run has reported its layers


class Zygote:
    def __init__(self, control: socket.socket, scratch_root: str, python_dirs: list[str], jailed: bool) -> None:
        self.control = control
        self.scratch_root = scratch_root
        self.runs: dict[int, _Run] = {}
        self.root = os.geteuid() == 0
        self.jailed = jailed
        self.network_namespace = self.root and oslayer.unshare_network()
        self.own_namespaces = _namespaces(os.getpid())
        self.pid_namespace_fd = os.open("/proc/self/ns/pid", os.O_RDONLY)
        self.free_slots = list(range(oslayer.RUN_ID_SLOTS - 1, -1, -1))
        self.jail = {"root_mount": os.path.join(scratch_root, ".root"), "python_dirs": python_dirs}
        os.makedirs(self.jail["root_mount"], mode=0o700, exist_ok=True)
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self) -> None:
        self._tell(
            {
                "op": "ready",
                "network_namespace": self.network_namespace,
                "landlock_abi": oslayer.landlock_abi(),
                "seccomp": oslayer.load_seccomp() is not None,
                "root": self.root,
                "zygote_jailed": self.jailed,
            }
        )
        while True:
            setups = {run.setup: pid for pid, run in self.runs.items() if run.setup is not None}
            timeout = self._next_deadline()
            readable, _, _ = select.select([self.control, self.wake_r, *setups], [], [], timeout)
            if self.wake_r in readable:
                os.read(self.wake_r, 512)
            for sock in readable:
                if sock in setups:
                    self._check_setup(setups[sock])
            if self.control in readable and not self._accept():
                return
            self._kill_overdue()
            self._reap()

    def _accept(self) -> bool:
        try:
            payload, fds, _, _ = socket.recv_fds(self.control, 1 << 16, 1)
        except OSError:
            return False
        if not payload:
            return False
        request = json.loads(payload)
        if "cancel" in request:  # the caller stopped waiting: stop the work too
            self._kill_run(request["cancel"], "cancel")
            return True
        run_sock = socket.socket(fileno=fds[0])
        if not self.free_slots:
            run_sock.close()
            self._tell({"op": "refused", "id": request["id"], "reason": "too many runs at once"})
            return True
        slot = self.free_slots.pop()
        scratch = os.path.join(self.scratch_root, request["id"])
        limits = request["limits"]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = self._fork(run_sock, theirs, scratch, limits, slot)
        run_sock.close()
        theirs.close()
        self.runs[pid] = _Run(
            request["id"], time.monotonic() + float(limits["wall_seconds"]), scratch, slot, limits, ours
        )
        return True

    def _fork(self, run_sock: socket.socket, setup: socket.socket, scratch: str, limits: dict, slot: int) -> int:
        """Fork the run into a PID namespace of its own (when root); returns its pid."""
        own_pid_namespace = self.root and oslayer.next_child_in_new_pid_namespace()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            run_child(run_sock, setup, scratch, limits, {**self.jail, "run_id": oslayer.RUN_ID_BASE + slot})
        if own_pid_namespace:
            oslayer.restore_pid_namespace(self.pid_namespace_fd)
        return pid

    def _check_setup(self, pid: int) -> None:
        """Read a run's own report, check it against /proc, let it go on, tell the host."""
        run = self.runs[pid]
        assert run.setup is not None
        layers: dict = {}
        try:
            raw = run.setup.recv(_SETUP_REPORT_BYTES)
            if raw:  # empty: the run died while setting up, and runs no tool code
                claimed = json.loads(raw)
                layers = self._verified(pid, run, claimed if isinstance(claimed, dict) else {})
                run.setup.send(b"go")
        except (OSError, ValueError):
            layers = {}
        run.setup.close()
        run.setup = None
        self._tell({"op": "started", "id": run.run_id, "layers": layers})

    def _verified(self, pid: int, run: _Run, claimed: dict) -> dict:
        """The layers as the kernel shows them; only Landlock (which /proc does not
        show) is taken from the run's report, made before any tool code ran."""
        status = _status(pid)
        namespaces = _namespaces(pid)
        run_id = oslayer.RUN_ID_BASE + run.slot
        uid = int(status.get("Uid", "-1").split()[0])
        landlock = claimed.get("landlock_abi")
        return {
            "zygote_jailed": self.jailed,
            "fresh_process": True,
            "rlimits": _cpu_limits(pid) == _expected_cpu_limits(run.limits),
            "no_new_privs": status.get("NoNewPrivs") == "1",
            "landlock_abi": landlock if isinstance(landlock, int) and 0 <= landlock <= oslayer.landlock_abi() else 0,
            "uid": uid,
            "own_uid": uid == run_id and status.get("Gid", "").split()[:1] == [str(run_id)],
            "network_namespace": self.network_namespace and namespaces.get("net") == self.own_namespaces.get("net"),
            "pid_namespace": namespaces.get("pid") not in (None, self.own_namespaces.get("pid")),
            "mount_namespace": namespaces.get("mnt") not in (None, self.own_namespaces.get("mnt"))
            and claimed.get("minimal_root") is True,
            "seccomp": status.get("Seccomp") == "2",
        }

    def _tell(self, message: dict) -> None:
        self.control.send(json.dumps(message).encode())

    def _next_deadline(self) -> float | None:
        pending = [run.deadline for run in self.runs.values() if run.deadline != float("inf")]
        if not pending:
            return None
        return max(0.0, min(pending) - time.monotonic())

    def _kill_overdue(self) -> None:
        now = time.monotonic()
        for pid, run in list(self.runs.items()):
            if run.deadline <= now:
                self._kill(pid, run, "wall")

    def _kill_run(self, run_id: str, reason: str) -> None:
        for pid, run in list(self.runs.items()):
            if run.run_id == run_id and run.deadline != float("inf"):
                self._kill(pid, run, reason)

    def _kill(self, pid: int, run: _Run, reason: str) -> None:
        os.kill(pid, signal.SIGKILL)
        run.deadline = float("inf")
        self._tell({"op": "killed", "id": run.run_id, "reason": reason})

    def _reap(self) -> None:
        while self.runs:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is None:
                continue
            if run.setup is not None:
                run.setup.close()
                self._tell({"op": "started", "id": run.run_id, "layers": {}})
            shutil.rmtree(run.scratch, ignore_errors=True)
            self.free_slots.append(run.slot)
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            self._tell(
                {
                    "op": "exit",
                    "id": run.run_id,
                    "signal": signum,
                    "status": os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0,
                    "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
                }
            )


def _python_dirs() -> list[str]:
    """The directories of the Python installation on sys.path (not the project's)."""
    project = os.path.realpath(os.environ["EUNICE_SANDBOX_PATH"])
    return [
        path
        for path in dict.fromkeys(sys.path[1:])
        if os.path.isdir(path) and os.path.realpath(path) != project and path.startswith("/")
    ]


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as status:
            return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)
    except OSError:
        return {}


def _namespaces(pid: int) -> dict[str, str]:
    found = {}
    for kind in ("net", "pid", "mnt"):
        try:
            found[kind] = os.readlink(f"/proc/{pid}/ns/{kind}")
        except OSError:
            pass
    return found


def _cpu_limits(pid: int) -> tuple[int, int]:
    """The run's RLIMIT_CPU (soft, hard) as the kernel shows it; (-1, -1) if unreadable."""
    try:
        with open(f"/proc/{pid}/limits") as limits:
            line = next(line for line in limits if line.startswith("Max cpu time"))
        soft, hard = line.split()[3:5]
        return int(soft), int(hard)
    except (OSError, StopIteration, ValueError):
        return -1, -1


def _expected_cpu_limits(limits: dict) -> tuple[int, int]:
    cpu = int(limits["cpu_seconds"])
    return cpu, cpu + oslayer.CPU_GRACE_SECONDS


def main() -> None:
    scratch_root = os.environ["EUNICE_SANDBOX_SCRATCH"]
    os.makedirs(scratch_root, mode=0o711, exist_ok=True)
    oslayer.load_seccomp()
    warmup.exercise()
    python_dirs = _python_dirs()
    jailed = os.geteuid() == 0
    if jailed:
        # Everything the zygote runs is imported by now: from here on it sees only
        # the Python installation, /proc and the scratch directories.
        oslayer.jail_zygote(scratch_root, python_dirs)
    control = socket.socket(fileno=int(os.environ["EUNICE_SANDBOX_CONTROL_FD"]))
    try:
        Zygote(control, scratch_root, python_dirs, jailed).serve()
    except (BrokenPipeError, ConnectionResetError):
        pass


if __name__ == "__main__":
    main()

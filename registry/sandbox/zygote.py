"""The zygote: a pre-warmed parent that forks one child per run.

Started by the host with a minimal environment (``python -I``, no Django, no
secrets), it imports pandas, numpy and RestrictedPython, exercises the code
paths tools use (so nothing is lazily imported after lockdown), moves itself
into an empty network namespace when it is root, and then serves requests on
the control socket named by EUNICE_SANDBOX_CONTROL_FD: each request carries a socket for the run.

It reaps children, kills runs past their wall-clock limit, wipes their scratch
directories and reports ``{"id", "status", "killed"}`` for every run.
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

sys.path.insert(0, os.environ["EUNICE_SANDBOX_PATH"])

from registry.sandbox import oslayer, warmup  # noqa: E402
from registry.sandbox.child import run_child  # noqa: E402


class Zygote:
    def __init__(self, control: socket.socket, scratch_root: str) -> None:
        self.control = control
        self.scratch_root = scratch_root
        self.runs: dict[int, tuple[str, float, str]] = {}  # pid -> (run id, deadline, scratch)
        self.network_namespace = os.geteuid() == 0 and oslayer.unshare_network()
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    def serve(self) -> None:
        self._tell({"op": "ready", "network_namespace": self.network_namespace,
                                 "landlock_abi": oslayer.landlock_abi(),
                                 "seccomp": oslayer.load_seccomp() is not None,
                                 "root": os.geteuid() == 0})
        while True:
            timeout = self._next_deadline()
            readable, _, _ = select.select([self.control, self.wake_r], [], [], timeout)
            if self.wake_r in readable:
                os.read(self.wake_r, 512)
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
        scratch = os.path.join(self.scratch_root, request["id"])
        limits = {**request["limits"], "network_namespace": self.network_namespace}
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            run_child(run_sock, scratch, limits)
        run_sock.close()
        self.runs[pid] = (request["id"], time.monotonic() + float(limits["wall_seconds"]), scratch)
        return True

    def _tell(self, message: dict) -> None:
        self.control.send(json.dumps(message).encode())

    def _next_deadline(self) -> float | None:
        pending = [deadline for _, deadline, _ in self.runs.values() if deadline != float("inf")]
        if not pending:
            return None
        return max(0.0, min(pending) - time.monotonic())

    def _kill_overdue(self) -> None:
        now = time.monotonic()
        for pid, (run_id, deadline, scratch) in list(self.runs.items()):
            if deadline <= now:
                os.kill(pid, signal.SIGKILL)
                self.runs[pid] = (run_id, float("inf"), scratch)
                self._tell({"op": "killed", "id": run_id, "reason": "wall"})

    def _kill_run(self, run_id: str, reason: str) -> None:
        for pid, (known_id, _, scratch) in list(self.runs.items()):
            if known_id == run_id:
                os.kill(pid, signal.SIGKILL)
                self.runs[pid] = (run_id, float("inf"), scratch)
                self._tell({"op": "killed", "id": run_id, "reason": reason})

    def _reap(self) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is None:
                continue
            shutil.rmtree(run[2], ignore_errors=True)
            signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            self._tell({"op": "exit", "id": run[0], "signal": signum})


def main() -> None:
    scratch_root = os.environ["EUNICE_SANDBOX_SCRATCH"]
    os.makedirs(scratch_root, mode=0o711, exist_ok=True)
    oslayer.load_seccomp()
    warmup.exercise()
    control = socket.socket(fileno=int(os.environ["EUNICE_SANDBOX_CONTROL_FD"]))
    try:
        Zygote(control, scratch_root).serve()
    except (BrokenPipeError, ConnectionResetError):
        pass


if __name__ == "__main__":
    main()

"""One run, in a process forked from the zygote: lock down, report, execute, answer, exit.

The order matters: limits and the scratch directory are set up while the
process can still see files; then the run moves into its own minimal root;
Landlock and the switch to the run's own uid follow; seccomp comes last because
it forbids what the earlier steps needed. Before any tool code runs, the run
tells the zygote which layers it set up and waits until the zygote has checked
them from outside (``/proc``); what the run says afterwards is never trusted.
No Django import.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import socket
from typing import Any

from registry.sandbox import oslayer, runner
from registry.sandbox.policy import SandboxRefusal
from registry.sandbox.protocol import recv_frame, recv_json, send_json

_MAX_REQUEST = 256 << 20
_OS_ERRNOS = {errno.EPERM, errno.EACCES, errno.ENOSYS, errno.ENETUNREACH, errno.EAGAIN, errno.EROFS, errno.ENOENT}


def run_child(
    sock: socket.socket, setup: socket.socket, scratch: str, limits: dict[str, Any], jail: dict[str, Any]
) -> None:
    """Never returns: the run exits with status 0 after answering, whatever happened.

    ``setup`` is the zygote's end for the layer report; ``jail`` says where the
    run's root is built and which uid it takes.
    """
    try:
        oslayer.die_with_parent()  # a zygote that dies takes its runs with it: no orphan spins on
        _isolate_fds({sock.fileno(), setup.fileno()})
        request = recv_json(sock, _MAX_REQUEST)
        datasets = pickle.loads(recv_frame(sock, _MAX_REQUEST)) if request.get("has_data") else {}
        layers = lock_down(scratch, limits, jail)
        _report(setup, layers)
        send_json(sock, _execute(sock, request, datasets, limits))
    except BaseException as exc:  # noqa: BLE001 - the run must answer and exit, never unwind into the zygote
        try:
            send_json(sock, {"op": "result", "ok": False, "stopped_by": _layer_of(exc), "error": _describe(exc)})
        except BaseException:  # noqa: BLE001 - the host sees EOF and the exit status instead
            pass
    finally:
        os._exit(0)


def _isolate_fds(keep: set[int]) -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 16)


def _report(setup: socket.socket, layers: dict[str, Any]) -> None:
    """Tell the zygote what was set up and wait for its check; raises if it never comes.

    Waiting keeps this process alive and unchanged while the zygote reads its
    /proc entries; closing the socket first means tool code can never reach it.
    """
    setup.send(json.dumps(layers).encode())
    setup.settimeout(10)
    if setup.recv(16) != b"go":
        raise SandboxRefusal("the zygote did not confirm the run's setup")
    setup.close()


def lock_down(scratch: str, limits: dict[str, Any], jail: dict[str, Any]) -> dict[str, Any]:
    """Apply the OS layer; return which layers this process set up for itself."""
    run_id = int(jail["run_id"])
    root = os.geteuid() == 0
    os.makedirs(scratch, mode=0o700)
    if root:
        os.chown(scratch, run_id, run_id)
    os.chdir(scratch)
    oslayer.set_limits(
        cpu_seconds=int(limits["cpu_seconds"]),
        memory_bytes=int(limits["memory_bytes"]),
        file_bytes=int(limits["file_bytes"]),
        open_files=32,
    )
    oslayer.exit_at_the_cpu_limit()
    layers: dict[str, Any] = {"fresh_process": True, "rlimits": True, "minimal_root": False}
    if root:
        oslayer.enter_minimal_root(scratch, jail["root_mount"], list(jail["python_dirs"]))
        layers["minimal_root"] = True
    here = oslayer.RUN_SCRATCH if root else scratch
    layers["no_new_privs"] = oslayer.no_new_privs()
    layers["landlock_abi"] = oslayer.landlock_confine(here)
    layers["uid"] = run_id if oslayer.become(run_id) else os.getuid()
    layers["seccomp"] = oslayer.seccomp_confine()
    return layers


def _execute(sock: socket.socket, request: dict, datasets: dict, limits: dict) -> dict:
    calls = _ToolCalls(sock, int(limits["max_tool_calls"]))
    df = datasets.get("default")
    frames = dict(datasets.get("frames") or {})
    given = dict(frames)
    inputs = request.get("inputs") or {}
    if request.get("language", True):
        code = runner.compile_tool(request["code"])
        glb = runner.namespace(inputs, df, calls, frames, calls.data)
    else:  # tests of the OS layer and the host alone: the code runs as plain Python
        code = compile(request["code"], "<unrestricted>", "exec")
        glb = {"df": df, "inputs": inputs, "call_tool": calls, "call": calls.data, "result": None}
    exec(code, glb)
    answer = runner.render(glb.get("result"))
    if request.get("want_frames"):
        answer.update(runner.frames_answer(glb.get("result"), frames, given))
    payload = json.dumps(answer, default=str)
    if len(payload) > int(limits["result_bytes"]):
        return {
            "op": "result",
            "ok": False,
            "stopped_by": "result_cap",
            "error": f"the result is {len(payload):,} bytes; the limit is {int(limits['result_bytes']):,}",
        }
    return {"op": "result", "ok": True, "answer": answer}


class _ToolCalls:
    """``call_tool(name, inputs)`` inside a run: a request to the host, its text back;
    ``call(name, **inputs)``: the same request, the tool's data back (or ToolFailed).

    The count here only gives a well-behaved tool a clear error early; the host
    counts and refuses calls itself.
    """

    def __init__(self, sock: socket.socket, cap: int) -> None:
        self.sock, self.cap, self.made = sock, cap, 0

    def __call__(self, name: str, inputs: dict | None = None) -> str:
        return str(self._ask(name, inputs or {}, structured=False).get("text", ""))

    def data(self, tool: str, inputs: dict | None = None, /, **named: Any) -> Any:
        """``tool``'s result as data (a table as a list of row dicts), for ``inputs`` and
        ``named`` together (a tool's own ``name`` input is just one of them); raises
        ToolFailed with the tool's hint or error when it did not succeed."""
        reply = self._ask(tool, {**(inputs or {}), **named}, structured=True)
        if not reply.get("ok"):
            raise ToolFailed(f"{tool}: {reply.get('message', 'the call failed')}")
        return reply.get("data")

    def _ask(self, name: str, inputs: dict, *, structured: bool) -> dict:
        if self.made >= self.cap:
            raise SandboxRefusal(f"more than {self.cap} call_tool calls in one run")
        self.made += 1
        request: dict[str, Any] = {"op": "call_tool", "name": str(name), "inputs": inputs}
        if structured:
            request["structured"] = True
        send_json(self.sock, request)
        return recv_json(self.sock, 64 << 20)


class ToolFailed(Exception):
    """A tool called with ``call`` answered with a hint or an error; the message is its text."""


def _layer_of(exc: BaseException) -> str:
    if isinstance(exc, (SandboxRefusal, runner.ToolCodeError)):
        return "language"
    if isinstance(exc, MemoryError):
        return "os:memory"
    if isinstance(exc, ImportError):  # the run's root and Landlock hide the Python installation's files
        return "os"
    if isinstance(exc, OSError) and exc.errno in _OS_ERRNOS:
        return "os"
    return "tool"


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:500]}"

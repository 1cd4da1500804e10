"""Class 2: a run that writes to the call_tool socket itself (the language layer bypassed)
can neither forge its answer or its record nor call past the cap: the host checks
every frame, counts the calls and records the layers the zygote verified."""

import json

import pytest

from registry.models import SandboxRun
from registry.sandbox import oslayer
from tests.conftest import text

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("language_layer_bypassed")]

# Plain Python that finds the run's socket and speaks the frame format directly.
RAW = """
import os, socket, stat, struct
def _is_socket(f):
    try:
        return stat.S_ISSOCK(os.fstat(f).st_mode)
    except OSError:
        return False
sock = socket.socket(fileno=next(f for f in range(3, 64) if _is_socket(f)))
def send(payload):
    sock.sendall(struct.pack('!I', len(payload)) + payload)
def receive():
    size = struct.unpack('!I', sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(size, socket.MSG_WAITALL)
"""

FORGED_RESULT = json.dumps(
    {
        "op": "result",
        "ok": True,
        "answer": {"kind": "text", "text": "forged"},
        "layers": {"seccomp": "forged", "landlock_abi": 99},
        "tool_calls": 0,
    }
)


def test_a_forged_record_is_refused_and_the_verified_layers_are_recorded(approved_tool, call):
    approved_tool("forger", RAW + f"send({FORGED_RESULT!r}.encode())\nsock.recv(1)")
    result = call("forger")
    assert "broke the sandbox protocol" in result.error and "unknown keys ['layers', 'tool_calls']" in result.error
    assert "forged" not in result.content
    run = SandboxRun.objects.get(tool_name="forger")
    assert run.stopped_by == "host:protocol" and not run.ok
    assert run.layers["seccomp"] is True and run.layers["landlock_abi"] == oslayer.landlock_abi()
    assert run.layers["own_uid"] and run.layers["pid_namespace"] and run.layers["mount_namespace"]


def test_calls_past_the_cap_are_refused_by_the_host(approved_tool, call, settings):
    settings.SANDBOX = {**settings.SANDBOX, "MAX_TOOL_CALLS": 3}
    approved_tool("counted", "result = 'counted ran'")
    flood = RAW + (
        'frame = b\'{"op":"call_tool","name":"counted","inputs":{}}\'\n'
        "for _ in range(40):\n    send(frame)\n    receive()\nresult = 'all 40 went through'"
    )
    approved_tool("flood", flood, dependencies=["counted"])
    result = call("flood")
    assert "more than 3 call_tool calls" in result.error and "[stopped by: host:calls]" in result.error
    assert SandboxRun.objects.filter(tool_name="counted").count() == 3
    assert SandboxRun.objects.get(tool_name="flood").tool_calls == 3


BAD_FRAMES = {
    "not JSON": b"{nope",
    "not an object": b"[1, 2]",
    "an unknown op": b'{"op": "shell", "cmd": "id"}',
    "an unknown key": b'{"op": "call_tool", "name": "x", "inputs": {}, "as_user": "admin"}',
    "inputs that are not an object": b'{"op": "call_tool", "name": "x", "inputs": "rm -rf"}',
    "a structured flag not true or false": b'{"op": "call_tool", "name": "x", "inputs": {}, "structured": "yes"}',
    "a tool name with a path": b'{"op": "call_tool", "name": "../x", "inputs": {}}',
    "a stop the host decides": b'{"op": "result", "ok": false, "stopped_by": "supervisor:wall"}',
    "a NaN": b'{"op": "result", "ok": true, "answer": {"kind": "text", "rows": NaN}}',
    "an answer of the wrong shape": b'{"op": "result", "ok": true, "answer": {"kind": "table", "rows": "9"}}',
}


@pytest.mark.parametrize("frame", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
def test_a_malformed_frame_ends_the_run_with_a_clear_error(approved_tool, call, frame):
    approved_tool("malformed", RAW + f"send({frame!r})\nsock.recv(1)")
    result = call("malformed")
    assert "[stopped by: host:protocol]" in result.error and "Traceback" not in result.content
    assert SandboxRun.objects.get(tool_name="malformed").stopped_by == "host:protocol"


def test_a_well_formed_call_still_works_when_spoken_directly(approved_tool, call):
    approved_tool("echo", "result = 'echo ran'")
    frame = b'{"op":"call_tool","name":"echo","inputs":{}}'
    approved_tool("direct", RAW + f"send({frame!r})\nresult = receive().decode()", dependencies=["echo"])
    assert "echo ran" in text(call("direct"))


def test_a_structured_call_spoken_directly_gets_the_tools_data(approved_tool, call):
    approved_tool("echo", "result = 'echo ran'")
    frame = b'{"op":"call_tool","name":"echo","inputs":{},"structured":true}'
    approved_tool("direct", RAW + f"send({frame!r})\nresult = receive().decode()", dependencies=["echo"])
    assert json.loads(text(call("direct"))) == {"ok": True, "rows": 1, "data": "echo ran"}

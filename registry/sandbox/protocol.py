"""Length-prefixed frames between the host, the zygote and a sandboxed run.

Only the host ever unpickles nothing: frames from a run are JSON, and the one
pickle frame travels host → run (the datasets), never back. This module has no
Django import: the zygote loads it.
"""

from __future__ import annotations

import json
import re
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!I")
MAX_CONTROL_FRAME = 1 << 20
# The exit status of a run the kernel warned (SIGXCPU) that its CPU seconds are used up:
# 128 + SIGXCPU, as a shell reports it. The zygote passes it on; the host names the stop.
CPU_LIMIT_STATUS = 128 + 24


class FrameTooLarge(Exception):
    """A peer announced a frame larger than the reader accepts."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit}")
        self.size = size
        self.limit = limit


class PeerClosed(Exception):
    """The other end closed the connection before a whole frame arrived."""


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def send_json(sock: socket.socket, message: dict[str, Any]) -> None:
    send_frame(sock, json.dumps(message, separators=(",", ":"), default=str).encode())


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(min(size - len(chunks), 1 << 20))
        if not chunk:
            raise PeerClosed()
        chunks += chunk
    return bytes(chunks)


def recv_frame(sock: socket.socket, limit: int) -> bytes:
    """Read one frame; raises FrameTooLarge (without reading it) or PeerClosed."""
    (size,) = _HEADER.unpack(recv_exact(sock, _HEADER.size))
    if size > limit:
        raise FrameTooLarge(size, limit)
    return recv_exact(sock, size)


def recv_json(sock: socket.socket, limit: int = MAX_CONTROL_FRAME) -> dict[str, Any]:
    return json.loads(recv_frame(sock, limit))


# --- what a run may say to the host --------------------------------------------
#
# Everything a run sends is a claim by code we do not trust (the language layer may
# have been bypassed and the code may write to the socket itself). The host parses
# each frame with these checks and ends the run on the first frame that fails one.

MAX_CALL_FRAME = 1 << 20
CHILD_STOPS = frozenset({"", "language", "tool", "os", "os:memory", "result_cap"})
_TOOL_NAME = re.compile(r"[A-Za-z0-9_\-]{1,64}")
_CALL_KEYS = frozenset({"op", "name", "inputs"})
_CALL_OPTIONS = frozenset({"structured"})  # the run wants the tool's data, not its text
_RESULT_KEYS = frozenset({"op", "ok", "answer", "error", "stopped_by"})
_ANSWER_KEYS = frozenset({"kind", "text", "rows", "response", "frame", "frames"})
_KINDS = frozenset({"table", "text", "response"})
_MAX_ERROR = 4000


class ProtocolError(Exception):
    """A run sent a frame the host does not accept; the message says which rule it broke."""


def check_run_frame(message: Any, size: int) -> dict[str, Any]:
    """A run's frame (parsed by the host's depth-bounded parser; ``size`` bytes on the
    wire) as a checked ``call_tool`` request or ``result``.

    Raises ProtocolError naming the first rule broken: not an object, an unknown
    op, missing or unknown keys, a value of the wrong type or size.
    """
    if not isinstance(message, dict):
        raise ProtocolError("a frame is not a JSON object")
    op = message.get("op")
    if op == "call_tool":
        _check_call(message, size)
    elif op == "result":
        _check_result(message)
    else:
        raise ProtocolError(f"unknown op {str(op)[:40]!r}")
    return message


def _keys(message: dict, allowed: frozenset[str], required: frozenset[str], what: str) -> None:
    unknown = set(message) - allowed
    if unknown:
        raise ProtocolError(f"{what} has unknown keys {sorted(str(k)[:40] for k in unknown)[:5]}")
    missing = required - set(message)
    if missing:
        raise ProtocolError(f"{what} lacks {sorted(missing)}")


def _check_call(message: dict, size: int) -> None:
    _keys(message, _CALL_KEYS | _CALL_OPTIONS, _CALL_KEYS, "a call_tool frame")
    if size > MAX_CALL_FRAME:
        raise ProtocolError(f"a call_tool frame of {size:,} bytes exceeds {MAX_CALL_FRAME:,}")
    name = message["name"]
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise ProtocolError("call_tool needs a tool name of 1-64 letters, digits, '_' or '-'")
    if not isinstance(message["inputs"], dict):
        raise ProtocolError("call_tool inputs must be a JSON object")
    if not isinstance(message.get("structured", False), bool):
        raise ProtocolError("a call_tool frame's 'structured' must be true or false")


def _check_result(message: dict) -> None:
    _keys(message, _RESULT_KEYS, frozenset({"op", "ok"}), "a result frame")
    ok, answer = message["ok"], message.get("answer")
    if not isinstance(ok, bool):
        raise ProtocolError("a result's 'ok' must be true or false")
    stopped_by, error = message.get("stopped_by", ""), message.get("error", "")
    if not isinstance(stopped_by, str) or stopped_by not in CHILD_STOPS:
        raise ProtocolError(f"a run cannot claim to be stopped by {str(stopped_by)[:40]!r}")
    if not isinstance(error, str) or len(error) > _MAX_ERROR:
        raise ProtocolError(f"a result's 'error' must be text of at most {_MAX_ERROR} characters")
    if ok and (stopped_by or not isinstance(answer, dict)):
        raise ProtocolError("a successful result needs an answer and no stop reason")
    if answer is not None:
        _check_answer(answer)


def _check_answer(answer: Any) -> None:
    if not isinstance(answer, dict):
        raise ProtocolError("a result's 'answer' must be a JSON object")
    _keys(answer, _ANSWER_KEYS, frozenset({"kind"}), "an answer")
    if answer["kind"] not in _KINDS:
        raise ProtocolError(f"an answer's kind must be one of {sorted(_KINDS)}")
    checks = (("text", str), ("rows", int), ("response", dict), ("frame", dict), ("frames", dict))
    for key, expected in checks:
        if key in answer and (not isinstance(answer[key], expected) or isinstance(answer[key], bool)):
            raise ProtocolError(f"an answer's {key!r} must be a {expected.__name__}")
    for payload in [answer.get("frame"), *(answer.get("frames") or {}).values()]:
        if payload is not None and not _is_frame_payload(payload):
            raise ProtocolError("a table must be {'split': text, 'dtypes': {column: text}}")


def _is_frame_payload(payload: Any) -> bool:
    return (
        isinstance(payload, dict)
        and set(payload) == {"split", "dtypes"}
        and isinstance(payload["split"], str)
        and isinstance(payload["dtypes"], dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in payload["dtypes"].items())
    )

"""Length-prefixed frames between the host, the zygote and a sandboxed run.

Only the host ever unpickles nothing: frames from a run are JSON, and the one
pickle frame travels host → run (the datasets), never back. This module has no
Django import: the zygote loads it.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct("!I")
MAX_CONTROL_FRAME = 1 << 20


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

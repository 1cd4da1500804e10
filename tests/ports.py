"""Ports for the servers the tests start, and how to know the right server answers on one.

A port picked by binding to port 0 and closing is free only at that moment: until the
server the test starts binds it, any other process may be given it. CI runs three test
passes side by side, each starting servers, so a bare "does something accept on this
port?" once took another pass's server for ours, and the tests after it were refused.
Three ways out, as the server allows:

- ``free_port()`` picks below the kernel's ephemeral range, which ``bind(0)`` and outgoing
  connections draw from, so no other process is given it in passing.
- ``held_port()``: the test binds and listens itself and hands the socket to the server
  (daphne's ``--fd``); the port is never free in between.
- ``listens(pid, port)``: the process the test started (or one of its children) owns the
  listening socket, as ``/proc`` shows it; someone else's listener does not count.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path


def free_port() -> int:
    """A loopback port free at this moment, outside the kernel's ephemeral range.

    The kernel hands out ephemeral ports to every ``bind(0)`` and outgoing connection of
    every process, so one picked from that range is soon given to someone else; one picked
    below it is taken only by an explicit choice like this one. Prefer ``held_port`` where
    the server can adopt a socket.
    """
    low, high = _ephemeral_range()
    choices = range(_LOWEST, low) if low - _LOWEST >= 1000 else range(high + 1, 65536)
    for _ in range(100):
        port = _random.choice(choices)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as sock:  # a crowded machine: any port the kernel gives
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_LOWEST = 20000  # below it, the well-known ports of services a machine may run
_random = random.SystemRandom()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def held_port() -> socket.socket:
    """A listening socket on a free loopback port, inheritable, for a server to adopt."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def listens(pid: int, port: int) -> bool:
    """Whether ``pid`` or a descendant owns a socket listening on loopback ``port``."""
    inodes = _listening_inodes(port)
    return bool(inodes) and any(_owns(process, inodes) for process in (pid, *descendants(pid)))


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{inode}]")
    return inodes


def _owns(pid: int, inodes: set[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            continue
    return False


def descendants(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc), nearest first."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        frontier = [kid for parent in frontier for kid in parents.get(parent, [])]
        found.extend(frontier)
    return found

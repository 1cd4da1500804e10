"""No orphans: a process forked by the job cluster dies with the process that forked it.

Linux's PR_SET_PDEATHSIG, set in every child right after fork. Without it,
killing the cluster's parent process left its sentinel and workers running
(four orphans that went on taking jobs). Elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
_forking_pid = os.getpid()


def die_with_parent(sig: int = signal.SIGKILL, *, parent: int | None = None) -> None:
    """Have the kernel send ``sig`` to this process when its parent exits (Linux only).

    With ``parent``, a parent that already died before the call is noticed too.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def _remember_forking_pid() -> None:
    global _forking_pid
    _forking_pid = os.getpid()


def _after_fork_in_child() -> None:
    die_with_parent(signal.SIGKILL, parent=_forking_pid)


def children_die_with_their_parent() -> None:
    """From now on, every process this one (or its descendants) forks dies when its parent dies."""
    os.register_at_fork(before=_remember_forking_pid, after_in_child=_after_fork_in_child)

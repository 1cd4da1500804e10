"""The per-user cap on answers running at once, shared by the websocket and REST.

Two checks. ``try_start`` counts this process's answers in memory: the quick
refusal, before anything is read or stored. The turn's reservation then counts
the user's turns running in every server process (``turn_reservations``: the
running, live turn records of the user's conversations, under a lock of the
user's row on PostgreSQL), so a deployment with several server processes holds
the cap across all of them and raises ``RunCapReached`` past it.
"""

from __future__ import annotations

import threading
from collections import Counter

from django.conf import settings

_lock = threading.Lock()
_running: Counter = Counter()  # user id -> answers running in this process


def try_start(user_id) -> bool:
    """Take one of the user's run slots; False when all are taken."""
    with _lock:
        if _running[user_id] >= settings.EUNICE_MAX_RUNS_PER_USER:
            return False
        _running[user_id] += 1
        return True


def finish(user_id) -> None:
    """Give the slot back (once per successful ``try_start``)."""
    with _lock:
        _running[user_id] -= 1
        if _running[user_id] <= 0:
            del _running[user_id]


class RunCapReached(Exception):
    """The user's answers running in all server processes fill the cap; nothing was stored."""

    def __init__(self) -> None:
        super().__init__(too_many_message())


def too_many_message() -> str:
    return f"you already have {settings.EUNICE_MAX_RUNS_PER_USER} answers running; wait or cancel one"

"""The per-user cap on answers running at once, shared by the websocket and REST.

Counted per process, like the turns themselves: a deployment with several
server processes allows the cap in each.
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


def too_many_message() -> str:
    return f"you already have {settings.EUNICE_MAX_RUNS_PER_USER} answers running; wait or cancel one"

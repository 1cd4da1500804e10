"""The embedded default's channel layer: Channels' in-memory layer, swept less often.

The stock layer looks for expired messages and group memberships on every
send, group send and receive, walking every channel and every group. Each
open socket keeps a receive pending and announces itself to its group, so
with N sockets open each of those operations costs O(N) under the GIL, and
N sockets opening at once cost O(N²): about 0.5 ms of CPU per conversation
when 200 start together (bench/turns.py). Sweeping at most once a second
keeps what expiry is for (a dead channel's messages do not pile up) and
makes the cost independent of how many sockets are open.
"""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer


class SweptInMemoryChannelLayer(InMemoryChannelLayer):
    """``InMemoryChannelLayer`` whose expiry sweep runs at most every ``SWEEP_SECONDS``.

    A message may therefore outlive its expiry (60 s by default) by up to that
    long before it is dropped; nothing else changes.
    """

    SWEEP_SECONDS = 1.0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._next_sweep = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.SWEEP_SECONDS
        super()._clean_expired()

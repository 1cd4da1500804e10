"""PostgreSQL without a health-check round trip for a connection that has just worked.

With ``CONN_HEALTH_CHECKS``, Django pings the server before the first query
of every request cycle, and every ``in_db_thread`` step of a turn is a cycle
of its own: about ten pings per turn. Each one is a network round trip, and
on the way back the worker thread queues for the GIL behind the event loop
that streams answers. In ``bench/turns.py`` (200 conversations, PostgreSQL +
Redis) relay p99 fell from 32-40 ms to 20-24 ms without them.

Here a connection that finished a cycle in which it was used, without an
error, less than ``TRUSTED_FOR`` seconds ago skips the ping; a connection
idle for longer — when a server restart or an idle timeout may have closed
it — is still checked before use, as Django does. A connection that breaks
within that window fails its next query, and Django closes it at the end of
that cycle, as it would without health checks.
"""

from __future__ import annotations

import time

from django.db.backends.postgresql import base

#: Seconds after a successful cycle during which the connection is trusted.
TRUSTED_FOR = 5.0


class DatabaseWrapper(base.DatabaseWrapper):
    _worked_at = float("-inf")
    health_check_done: bool  # set by Django's base class; untyped in django-stubs

    def close_if_unusable_or_obsolete(self) -> None:
        # health_check_done is reset at every cycle's end and set when a cursor
        # is made: True here means this cycle used the connection.
        worked = self.connection is not None and self.health_check_done and not self.errors_occurred
        super().close_if_unusable_or_obsolete()
        if worked and self.connection is not None:
            self._worked_at = time.monotonic()

    def close_if_health_check_failed(self) -> None:
        if (
            self.connection is not None
            and not self.health_check_done
            and time.monotonic() - self._worked_at < TRUSTED_FOR
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def close(self) -> None:
        super().close()
        self._worked_at = float("-inf")

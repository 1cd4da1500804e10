"""A circuit breaker per server: after 5 consecutive failures, fail fast for 60 s."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

FAILURE_THRESHOLD = 5
OPEN_SECONDS = 60.0


@dataclass
class CircuitBreaker:
    threshold: int = FAILURE_THRESHOLD
    open_seconds: float = OPEN_SECONDS
    failures: int = 0
    opened_at: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def blocked_for(self, now: float | None = None) -> float:
        """Seconds until a call may be tried again; 0 when it may go now.

        Once the open period is over one trial call goes through (half-open);
        its outcome closes the breaker or opens it for another period.
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            if self.opened_at is None:
                return 0.0
            remaining = self.opened_at + self.open_seconds - now
            if remaining > 0:
                return remaining
            self.opened_at = now  # the trial call; others keep failing fast meanwhile
            return 0.0

    def success(self) -> None:
        with self._lock:
            self.failures = 0
            self.opened_at = None

    def failure(self, now: float | None = None) -> None:
        with self._lock:
            self.failures += 1
            if self.failures >= self.threshold:
                self.opened_at = time.monotonic() if now is None else now

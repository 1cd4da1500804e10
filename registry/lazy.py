"""``Lazy``: a process-wide object built on first use, once, from any thread.

The one helper for the registry's singletons (the registry, the MCP manager, the
execution-log writer, the shared event loop) in place of a hand-written
double-checked lock each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """``lazy()`` builds the value on the first call and returns the same one after."""

    __slots__ = ("_build", "_value", "_lock")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def __call__(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
                value = self._value
        return value

    def peek(self) -> T | None:
        """The value if it has been built, without building it."""
        return self._value

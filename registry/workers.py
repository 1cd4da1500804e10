"""Where synchronous tool handlers run: worker threads, with slots per tool and per tenant.

A Python thread cannot be killed. A handler still running when its caller stops
waiting (its timeout, or the user's cancel) keeps its thread; the pool writes
that thread off (``lost``) and starts another in its place, so hung handlers
never shrink the pool the other calls run on. What a hung handler does keep
until it returns is its slots: one of its tool's (``EUNICE_TOOL_CALLS_PER_TOOL``)
and one of its tenant's (``EUNICE_TOOL_CALLS_PER_TENANT``). A call that finds
either full is refused at once (``Busy``), so one tool's or one tenant's hung
calls stop only that tool or that tenant. The threads are daemons: a hung
handler never holds up the process's exit.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class Busy(Exception):
    """No slot for the call: its tool or its tenant has as many calls running as allowed."""


@dataclass(eq=False, slots=True)
class _Job:
    future: concurrent.futures.Future
    func: Callable[..., Any]
    args: tuple
    tool: str
    tenant: str
    abandoned: bool = False
    settled: bool = field(default=False)


class ToolWorkers:
    """Worker threads for tool handlers, at most ``threads`` of them not written off."""

    def __init__(self, *, threads: int, per_tool: int, per_tenant: int) -> None:
        self._threads, self._per_tool, self._per_tenant = threads, per_tool, per_tenant
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._by_tool: Counter[str] = Counter()
        self._by_tenant: Counter[str] = Counter()
        self._jobs: dict[concurrent.futures.Future, _Job] = {}
        self._live = 0  # threads that are not written off
        self._idle = 0
        self._queued = 0
        self._lost = 0  # threads written off since the start, ever
        self._hung = 0  # written-off threads whose handler still runs
        self._started = 0

    def submit(self, tool: str, tenant: str, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Run ``func(*args)`` on a worker. Raises Busy when ``tool`` or ``tenant`` has no slot left."""
        job = _Job(concurrent.futures.Future(), func, args, tool, tenant)
        with self._lock:
            if self._by_tool[tool] >= self._per_tool:
                raise Busy(f"{tool} already has {self._per_tool} calls running; try again when one has finished")
            if self._by_tenant[tenant] >= self._per_tenant:
                raise Busy(
                    f"this workspace already has {self._per_tenant} tool calls running; try again when one has finished"
                )
            self._by_tool[tool] += 1
            self._by_tenant[tenant] += 1
            self._jobs[job.future] = job
            self._queued += 1
            self._grow()
        self._queue.put(job)
        return job.future

    def abandon(self, future: concurrent.futures.Future) -> None:
        """The caller stopped waiting on ``future``: a call not started never runs; the thread
        of one running is written off and replaced (the handler's slots stay taken until it returns)."""
        if future.cancel():
            return
        with self._lock:
            job = self._jobs.get(future)
            if job is None or job.abandoned or job.settled:
                return
            job.abandoned = True
            self._live -= 1
            self._lost += 1
            self._hung += 1
            self._grow()

    def stats(self) -> dict[str, int]:
        """What the pool holds now: its threads, those running a call, those written off."""
        with self._lock:
            return {
                "threads": self._live,
                "busy": self._live - self._idle,
                "queued": self._queued,
                "lost": self._lost,
                "hung": self._hung,
            }

    def _grow(self) -> None:
        # Under the lock: one more thread when calls wait with no idle thread to take them.
        if self._queued > self._idle and self._live < self._threads:
            self._live += 1
            self._idle += 1
            self._started += 1
            threading.Thread(target=self._work, name=f"tool-{self._started}", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            if job.future.set_running_or_notify_cancel():
                try:
                    job.future.set_result(job.func(*job.args))
                except BaseException as exc:  # noqa: BLE001 (handed to the caller, which classifies it)
                    job.future.set_exception(exc)
            with self._lock:
                job.settled = True
                self._jobs.pop(job.future, None)
                self._by_tool[job.tool] -= 1
                self._by_tenant[job.tenant] -= 1
                if job.abandoned:  # written off: another thread has taken this one's place
                    self._hung -= 1
                    return
                self._idle += 1

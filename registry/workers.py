"""Where synchronous tool handlers run: worker threads, with slots per tool and per tenant.

A Python thread cannot be killed. A handler still running when its caller stops
waiting (its timeout, or the user's cancel) keeps its thread; the pool writes
that thread off (``lost``) and starts another in its place, so hung handlers
never shrink the pool the other calls run on. What a hung handler does keep
until it returns is its slots: one of its tool's (``EUNICE_TOOL_CALLS_PER_TOOL``)
and one of its tenant's (``EUNICE_TOOL_CALLS_PER_TENANT``). A call that finds
either full waits in line (first come, first served) until both have a slot,
within its own timeout; one that never got a slot is reported as busy
(``abandon`` says why). So a burst of quick calls runs a few at a time, and one
tool's or one tenant's hung calls hold up only that tool or that tenant. The threads are daemons: a hung
handler never holds up the process's exit.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False, slots=True)
class _Job:
    future: concurrent.futures.Future
    func: Callable[..., Any] | None  # None: a reservation (``reserve``), which runs on no thread
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
        self._waiting: deque[_Job] = deque()  # calls with no slot yet, in arrival order
        self._live = 0  # threads that are not written off
        self._idle = 0
        self._queued = 0
        self._lost = 0  # threads written off since the start, ever
        self._hung = 0  # written-off threads whose handler still runs
        self._started = 0

    def submit(self, tool: str, tenant: str, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Run ``func(*args)`` on a worker, once ``tool`` and ``tenant`` each have a slot."""
        job = _Job(concurrent.futures.Future(), func, args, tool, tenant)
        with self._lock:
            self._jobs[job.future] = job
            if self._waiting or not self._has_slots(job):
                self._waiting.append(job)
                return job.future
            self._start(job)
        return job.future

    def reserve(self, tool: str, tenant: str) -> concurrent.futures.Future:
        """Slots for a call that runs on its caller's event loop rather than a thread (an
        MCP call awaits a session there): the future is done once ``tool`` and ``tenant``
        each have a slot, at once when both are free, else in line with the threaded calls.
        Give them back with ``release``; stop waiting with ``abandon``, as for ``submit``."""
        job = _Job(concurrent.futures.Future(), None, (), tool, tenant)
        with self._lock:
            if self._waiting or not self._has_slots(job):
                self._jobs[job.future] = job
                self._waiting.append(job)
                return job.future
            self._start(job)
        return job.future

    def release(self, tool: str, tenant: str) -> None:
        """Give back the slots a reservation took (its call has ended)."""
        with self._lock:
            self._by_tool[tool] -= 1
            self._by_tenant[tenant] -= 1
            if self._waiting:
                self._admit()

    def _has_slots(self, job: _Job) -> bool:
        return self._by_tool[job.tool] < self._per_tool and self._by_tenant[job.tenant] < self._per_tenant

    def _start(self, job: _Job) -> None:
        # Under the lock: take the job's slots and hand it to a thread.
        self._by_tool[job.tool] += 1
        self._by_tenant[job.tenant] += 1
        if job.func is None:  # a reservation: its caller runs the call
            self._jobs.pop(job.future, None)
            job.future.set_result(None)
            return
        self._queued += 1
        self._grow()
        self._queue.put(job)

    def _admit(self) -> None:
        # Under the lock, after slots were freed: start the waiting calls that now fit, in
        # order; a call whose caller gave up is dropped. Others keep their place.
        still: deque[_Job] = deque()
        for job in self._waiting:
            if job.future.cancelled():
                self._jobs.pop(job.future, None)
            elif self._has_slots(job):
                self._start(job)
            else:
                still.append(job)
        self._waiting = still

    def why_busy(self, tool: str, tenant: str) -> str:
        """Why a call of ``tool`` for ``tenant`` found no slot."""
        if self._by_tool[tool] >= self._per_tool:
            return f"{tool} already has {self._per_tool} calls running"
        return f"this workspace already has {self._per_tenant} tool calls running"

    def abandon(self, future: concurrent.futures.Future) -> str | None:
        """The caller stopped waiting on ``future``. A call that never got a slot never runs,
        and the answer says why it had none; the thread of one running is written off and
        replaced (the handler's slots stay taken until it returns)."""
        with self._lock:
            job = self._jobs.get(future)
            if job is not None and job in self._waiting and future.cancel():
                self._waiting.remove(job)
                self._jobs.pop(future, None)
                return self.why_busy(job.tool, job.tenant)
        if future.cancel():
            return None
        with self._lock:
            job = self._jobs.get(future)
            if job is None or job.abandoned or job.settled:
                return None
            job.abandoned = True
            self._live -= 1
            self._lost += 1
            self._hung += 1
            self._grow()
        return None

    def started(self, future: concurrent.futures.Future) -> bool:
        """Whether the call ``future`` stands for got its slots (it runs, or has run)."""
        with self._lock:
            job = self._jobs.get(future)
            return job is None or job not in self._waiting

    def stats(self) -> dict[str, int]:
        """What the pool holds now: its threads, those running a call, those written off."""
        with self._lock:
            return {
                "threads": self._live,
                "busy": self._live - self._idle,
                "queued": self._queued + len(self._waiting),
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
            assert job.func is not None  # reservations never reach a thread
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
                if not job.abandoned:
                    self._idle += 1
                if self._waiting:
                    self._admit()
                if job.abandoned:  # written off: another thread has taken this one's place
                    self._hung -= 1
                    return

"""Running async handlers from synchronous code.

Coroutines run on one long-lived event loop owned by a daemon thread, not on a
throwaway loop created per call: a task a handler starts there is not torn
down when the handler returns. Work that must outlive the process, or survive
a restart, still belongs in a django-q2 job (``registry.background``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
import types
from collections.abc import Coroutine
from typing import Any, TypeVar

from registry.lazy import Lazy

T = TypeVar("T")
logger = logging.getLogger("eunice.db")


def _start_loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="registry-event-loop", daemon=True)
    thread.start()
    return loop, thread


_background: Lazy[tuple[asyncio.AbstractEventLoop, threading.Thread]] = Lazy(_start_loop)


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use."""
    return _background()[0]


def on_background_loop() -> bool:
    started = _background.peek()
    return started is not None and threading.current_thread() is started[1]


def run_sync(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run ``coro`` on the shared loop and wait for it.

    Raises TimeoutError after ``timeout`` seconds (the coroutine is cancelled),
    and RuntimeError when called from the shared loop itself, where waiting
    would deadlock: async code should ``await`` instead.
    """
    if on_background_loop():
        coro.close()
        raise RuntimeError("run_sync called on the registry loop; await the coroutine instead")
    future = asyncio.run_coroutine_threadsafe(coro, background_loop())
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"timed out after {timeout:g} s") from None


def in_db_thread(func):
    """``func`` as an awaitable that runs on a database thread, never on the event loop.

    For short bookkeeping steps (a turn's reads and writes): they run on a
    small pool of their own, ``EUNICE_DB_THREADS`` threads. Those steps are
    mostly Python under the GIL, so more threads add little throughput, and
    each one more is another contender for the GIL the event loop needs to
    relay the answers already streaming (bench/turns.py, when many turns
    start at once). Work that may take long (a tool's handler) runs on the
    registry's tool workers (``registry.workers``) instead, so it never holds
    up a turn's bookkeeping.

    The thread's database connection is tidied before and after, as for a
    request (with CONN_MAX_AGE=0 it is closed), so no connection outlives it.
    A step whose first statement finds the connection dead runs once more on a
    new one (``reconnecting``).

    The awaitable made for a module's own function is kept and reused (a turn
    makes several steps, each one's wrapping cost about a fifth of the hop);
    a closure or a bound method is wrapped on each call, so nothing it holds
    is kept.
    """
    from channels.db import database_sync_to_async

    pool = _db_pool()
    kept = _is_module_function(func)
    step = _steps.get((func, pool)) if kept else None
    if step is None:
        step = database_sync_to_async(reconnecting(func), thread_sensitive=False, executor=pool)
        if kept:
            _steps[func, pool] = step
    return step


# (function, pool) -> its awaitable: only module-level functions, so the number is bounded.
_steps: dict[tuple[Any, concurrent.futures.ThreadPoolExecutor], Any] = {}


def _is_module_function(func: Any) -> bool:
    return isinstance(func, types.FunctionType) and func.__closure__ is None and "<locals>" not in func.__qualname__


def reconnecting(func):
    """``func``, run again once on a fresh connection when its very first statement
    failed because the connection was gone (a failover, ``pg_terminate_backend``, an
    idle timeout): nothing of the step ran, so running it again is safe. A failure
    after a statement has run, or on a connection that still works, is raised."""
    from django.db import InterfaceError, OperationalError, connection

    @functools.wraps(func)
    def step(*args: Any, **kwargs: Any) -> Any:
        ran: list[None] = []

        def count(execute, sql, params, many, context):  # noqa: ANN001, ANN202
            ran.append(None)
            return execute(sql, params, many, context)

        try:
            with connection.execute_wrapper(count):
                return func(*args, **kwargs)
        except (OperationalError, InterfaceError):
            if len(ran) > 1 or connection.in_atomic_block or connection.is_usable():
                raise
        logger.warning("the database connection was gone before %s; running it on a new one", func.__name__)
        connection.close()
        return func(*args, **kwargs)

    return step


def in_worker_thread(func):
    """``func`` as an awaitable on the event loop's default thread pool: for work
    that may take long, such as a synchronous tool handler. Connections are
    tidied as for ``in_db_thread``."""
    from channels.db import database_sync_to_async

    return database_sync_to_async(func, thread_sensitive=False)


_db_pools: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_lock = threading.Lock()


def _db_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The pool for ``EUNICE_DB_THREADS`` threads (made on first use; one per size,
    so a test that changes the setting gets a pool of its size)."""
    from django.conf import settings

    size = settings.EUNICE_DB_THREADS
    pool = _db_pools.get(size)
    if pool is None:
        with _lock:
            pool = _db_pools.get(size)
            if pool is None:
                pool = _db_pools[size] = concurrent.futures.ThreadPoolExecutor(
                    max_workers=size, thread_name_prefix=f"db{size}"
                )
    return pool

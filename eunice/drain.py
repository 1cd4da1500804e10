"""Graceful stop: the turns running in this process get a bounded grace when the server stops.

Every turn (websocket or REST) runs through ``run_tracked``. On SIGTERM the
server stops accepting connections and calls ``drain``: running turns have
``EUNICE_SHUTDOWN_GRACE_SECONDS`` to finish; the rest are cancelled (a
cancelled turn keeps the events it recorded, ``conversations.loop.run_turn``)
and handed to ``close_interrupted``. New turns are refused while draining.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from registry.aio import in_db_thread

logger = logging.getLogger("eunice.drain")

T = TypeVar("T")
CANCEL_SECONDS = 5.0  # how long cancelled turns may take to write what they recorded
REFUSED = "the server is restarting; send your message again in a moment"
INTERRUPTED = (
    "the server restarted before the answer was finished; your message and what the answer "
    "had done so far are kept; send your message again in a moment"
)
RETRY_AFTER_SECONDS = 5

_turns: dict[asyncio.Task, str] = {}  # running turn -> its conversation id
_draining = False


def draining() -> bool:
    return _draining


async def run_tracked(conversation_id: str, func: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Await ``func(*args, **kwargs)`` (a turn of ``conversation_id``) where ``drain`` can see and stop it."""
    task = asyncio.current_task()
    assert task is not None, "run_tracked runs inside a task"
    _turns[task] = str(conversation_id)
    try:
        return await func(*args, **kwargs)
    finally:
        _turns.pop(task, None)


async def drain(grace: float) -> tuple[int, int]:
    """Refuse new turns, wait up to ``grace`` seconds for running ones, cancel the rest.

    Returns (turns that finished, turns interrupted).
    """
    global _draining
    _draining = True
    loop = asyncio.get_running_loop()
    running = {task for task in _turns if task.get_loop() is loop}
    if not running:
        return 0, 0
    logger.info("stopping: %d turn(s) running, %.0f s to finish", len(running), grace)
    _, late = await asyncio.wait(running, timeout=grace)
    interrupted = sorted({_turns[task] for task in late if task in _turns})
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late, timeout=CANCEL_SECONDS)
    for conversation_id in interrupted:
        await in_db_thread(close_interrupted)(conversation_id)
    if late:
        logger.warning("stopping: %d turn(s) interrupted after the %.0f s grace", len(late), grace)
    return len(running) - len(late), len(late)


_closers: list[Callable[[str], object]] = []


def on_interrupted(closer: Callable[[str], object]) -> None:
    """Register what closes a conversation's unfinished turn as interrupted
    (``conversations`` registers its own when the app is ready)."""
    _closers.append(closer)


def close_interrupted(conversation_id: str) -> None:
    """Close the conversation's turn that the stop cancelled as interrupted. A turn that
    closed itself while it was cancelled is left as it is (the closers are idempotent)."""
    if not _closers:
        logger.warning("turn of conversation %s interrupted by the server stopping", conversation_id)
    for closer in _closers:
        try:
            closer(conversation_id)
        except Exception:  # one conversation's bookkeeping must not stop the server stopping
            logger.exception("could not close the interrupted turn of conversation %s", conversation_id)

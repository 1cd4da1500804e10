"""Work that must outlive the tool call that started it goes to django-q2."""

from __future__ import annotations

from typing import Any


def enqueue(func: str, *args: Any, group: str | None = None, **kwargs: Any) -> str:
    """Queue ``func`` (a dotted path) for a django-q2 worker; returns the task id.

    From async code use ``aenqueue``: the ORM broker writes to the database,
    which Django refuses to do on an event-loop thread.
    """
    from django_q.tasks import async_task

    options = {"group": group} if group else {}
    return async_task(func, *args, **kwargs, **options)


async def aenqueue(func: str, *args: Any, group: str | None = None, **kwargs: Any) -> str:
    """``enqueue`` for coroutines: the broker write runs on a worker thread."""
    from registry.aio import in_db_thread

    return await in_db_thread(enqueue)(func, *args, group=group, **kwargs)

"""Work that must outlive the tool call that started it goes to django-q2.

Every job is a ``JobRun`` row and runs through ``run_job``, which records the
worker (host, pid) before calling the function and the outcome after. A worker
killed mid-job (SIGKILL, the OOM killer, a crashed machine) leaves its row
running; ``reap_lost_runs`` (each time a worker starts, and so when the cluster
starts) finds such rows whose process is gone and queues them again, up to
EUNICE_JOB_MAX_ATTEMPTS attempts, after which the run is failed with the reason.
A function may register what to do with its own records on either outcome
(``on_lost``): the tool builder does (registry/tool_jobs.py).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

logger = logging.getLogger("eunice.background")

RUNNER = "registry.background.run_job"
HOST = socket.gethostname()


@dataclass(frozen=True)
class LostHandlers:
    retry: Callable[..., None]  # the job's own records, reset for a fresh attempt (same args)
    fail: Callable[..., None]  # ... marked failed: (reason, *args)


_lost: dict[str, LostHandlers] = {}


def on_lost(func: str, *, retry: Callable[..., None], fail: Callable[..., None]) -> None:
    """What a job ``func`` (dotted path) does to its own records when its worker died under it."""
    _lost[func] = LostHandlers(retry, fail)


def enqueue(func: str, *args: Any, group: str | None = None, **kwargs: Any) -> str:
    """Queue ``func`` (a dotted path) for a django-q2 worker; returns the job's id (a JobRun).

    Arguments must be JSON: they are kept on the row, for a re-run. From async
    code use ``aenqueue``: the ORM broker writes to the database, which Django
    refuses to do on an event-loop thread.
    """
    from registry.models import JobRun

    run = JobRun.objects.create(func=func, args=list(args), kwargs=kwargs, group=group or "")
    _push(run)
    return run.pk


async def aenqueue(func: str, *args: Any, group: str | None = None, **kwargs: Any) -> str:
    """``enqueue`` for coroutines: the broker write runs on a worker thread."""
    from registry.aio import in_db_thread

    return await in_db_thread(enqueue)(func, *args, group=group, **kwargs)


def _push(run) -> None:  # noqa: ANN001
    from django_q.tasks import async_task

    options = {"group": run.group} if run.group else {}
    async_task(RUNNER, run.pk, **options)


def run_job(run_id: str) -> Any:
    """The django-q2 task of every job: claim the run, call its function, record the outcome."""
    from registry.models import JobRun, JobRunStatus

    claimed = JobRun.objects.filter(pk=run_id, status=JobRunStatus.QUEUED).update(
        status=JobRunStatus.RUNNING,
        host=HOST,
        pid=os.getpid(),
        process_started=_process_started(os.getpid()),
        started_at=timezone.now(),
        attempts=F("attempts") + 1,
    )
    if claimed != 1:  # run already, or by another worker (a broker's redelivery)
        return "not claimed"
    run = JobRun.objects.get(pk=run_id)
    func = _resolve(run.func)
    from django_q.exceptions import TimeoutException  # a SystemExit, raised in the worker at the limit

    try:
        result = func(*run.args, **run.kwargs)
    except TimeoutException:
        _finish(run_id, JobRunStatus.FAILED, f"it ran past the {settings.Q_TIMEOUT} s limit (EUNICE_Q_TIMEOUT)")
        raise
    except Exception as exc:
        logger.exception("job %s (%s) raised", run_id, run.func)
        _finish(run_id, JobRunStatus.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
        raise  # django-q2 records its own failed task too
    _finish(run_id, JobRunStatus.SUCCEEDED)  # error keeps what became of an earlier attempt
    return result


def reap_lost_runs() -> tuple[int, int]:
    """Runs left running on this host by a worker that is gone: queue again or fail. Returns (requeued, failed)."""
    from registry.models import JobRun, JobRunStatus

    requeued = failed = 0
    for run in JobRun.objects.filter(status=JobRunStatus.RUNNING, host=HOST):
        if _alive(run.pid, run.process_started):
            continue
        if run.attempts < settings.EUNICE_JOB_MAX_ATTEMPTS:
            requeued += _requeue(run)
        else:
            failed += _fail_lost(run)
    if requeued or failed:
        logger.warning("reaped jobs whose worker died: %d queued again, %d failed", requeued, failed)
    return requeued, failed


def _requeue(run) -> int:  # noqa: ANN001
    from registry.models import JobRunStatus

    with transaction.atomic():
        if not _move(run, JobRunStatus.QUEUED, error=f"attempt {run.attempts}: its worker (pid {run.pid}) died"):
            return 0
        handlers = _lost.get(run.func) or _handlers_of(run.func)
        if handlers:
            handlers.retry(*run.args, **run.kwargs)
        transaction.on_commit(lambda: _push(run))
    return 1


def _fail_lost(run) -> int:  # noqa: ANN001
    from registry.models import JobRunStatus

    reason = (
        f"its worker died during each of {run.attempts} attempt(s) (the last was pid {run.pid} on {run.host}); "
        "not retried again"
    )
    with transaction.atomic():
        if not _move(run, JobRunStatus.FAILED, error=reason, finished_at=timezone.now()):
            return 0
        handlers = _lost.get(run.func) or _handlers_of(run.func)
        if handlers:
            handlers.fail(reason, *run.args, **run.kwargs)
    return 1


def _move(run, status: str, **fields: Any) -> bool:  # noqa: ANN001
    """The conditional update that must change exactly one row: two reapers never both act on a run."""
    from registry.models import JobRun, JobRunStatus

    return (
        JobRun.objects.filter(pk=run.pk, status=JobRunStatus.RUNNING, pid=run.pid).update(status=status, **fields) == 1
    )


def _finish(run_id: str, status: str, error: str | None = None) -> None:
    from registry.models import JobRun, JobRunStatus

    fields = {"error": error} if error is not None else {}
    JobRun.objects.filter(pk=run_id, status=JobRunStatus.RUNNING, pid=os.getpid()).update(
        status=status, finished_at=timezone.now(), **fields
    )


def _resolve(func: str) -> Callable[..., Any]:
    module, _, name = func.rpartition(".")
    return getattr(import_module(module), name)


def _handlers_of(func: str) -> LostHandlers | None:
    """Importing the job's module registers its handlers (a fresh worker may not have imported it yet)."""
    try:
        _resolve(func)
    except (ImportError, AttributeError):
        return None
    return _lost.get(func)


def _process_started(pid: int | None) -> str:
    """When process ``pid`` started (clock ticks since boot, Linux); "" when unknown, gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    return "" if len(fields) < 20 or fields[0] in ("Z", "X") else fields[19]


def _alive(pid: int | None, started: str) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    now = _process_started(pid)
    return now == started if started else bool(now) or not os.path.exists("/proc/self/stat")

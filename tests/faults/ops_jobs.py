"""Background jobs the job-fault tests queue: each attempt leaves a row saying which process ran it."""

import os
import time

STALL_SECONDS = 600  # far past any test: the attempt ends only when its worker is killed


def _attempt(token: str) -> int:
    from registry.models import SeedLog

    attempt = SeedLog.objects.filter(key__startswith=f"job-attempt:{token}:").count() + 1
    SeedLog.objects.create(key=f"job-attempt:{token}:{attempt}", value={"pid": os.getpid()})
    return attempt


def stall_first_attempt(token: str) -> str:
    """The first attempt hangs (until its worker is killed); the next one finishes."""
    from registry.models import SeedLog

    if _attempt(token) == 1:
        time.sleep(STALL_SECONDS)
    SeedLog.objects.create(key=f"job-done:{token}")
    return "done"


def stall_always(token: str) -> None:
    _attempt(token)
    time.sleep(STALL_SECONDS)


def record_run(token: str) -> str:
    """Leaves one attempt row per run: a job run twice leaves two."""
    from registry.models import SeedLog

    _attempt(token)
    SeedLog.objects.create(key=f"job-done:{token}")
    return "done"

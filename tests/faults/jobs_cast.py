"""What the job-fault tests share: clusters of a test's own, queued stalling jobs, their attempts."""

import sys
import uuid

import pytest
from django.conf import settings

from registry.background import enqueue
from registry.models import SeedLog
from tests.faults.operator import Process, environment, wait_for

START_SECONDS = 120  # a cluster's start on a loaded machine
RECOVERY_SECONDS = 90  # a dead worker replaced, the job reaped, queued and picked up again


def start_cluster(name: str, **env) -> Process:
    """``manage.py jobs`` (what the server runs) on the test's database and broker."""
    broker = {"REDIS_URL": settings.REDIS_URL} if settings.REDIS_URL else {}
    return Process(name, [sys.executable, "manage.py", "jobs"], environment(**broker, **env))


@pytest.fixture
def clusters():
    """Clusters of the test's own, for the tests that stop or kill a whole cluster."""
    started = []

    def start(**env) -> Process:
        started.append(start_cluster(f"jobs-{len(started)}", **env))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def attempt(token: str, number: int, timeout: float = START_SECONDS) -> int:
    """The pid of the worker running attempt ``number`` of the job ``token`` names, once it has begun."""
    row = wait_for(lambda: SeedLog.objects.filter(key=f"job-attempt:{token}:{number}").first(), timeout, 0.2)
    assert row is not None, f"attempt {number} never began"
    return row.value["pid"]


def done(token: str) -> bool:
    return SeedLog.objects.filter(key=f"job-done:{token}").exists()


def queue(func: str) -> tuple[str, str]:
    token = uuid.uuid4().hex
    return enqueue(f"tests.faults.ops_jobs.{func}", token), token

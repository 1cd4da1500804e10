"""A django-q2 worker (or the whole cluster) killed mid-job: the job is re-run or failed, never lost."""

import signal
import sys
import time
import uuid

import pytest
from django.conf import settings

from registry.background import enqueue
from registry.models import JobRun, JobRunStatus, JobStatus, JobType, SeedLog, ToolJob
from tests.faults.operator import Process, alive, children, environment, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

START_SECONDS = 120  # a cluster's start on a loaded machine
RECOVERY_SECONDS = 90  # a dead worker replaced, the job reaped, queued and picked up again


@pytest.fixture
def clusters():
    """Start ``manage.py jobs`` (what the server runs) on the test's database and broker."""
    started = []

    def start(**env) -> Process:
        broker = {"REDIS_URL": settings.REDIS_URL} if settings.REDIS_URL else {}
        cluster = Process(f"jobs-{len(started)}", [sys.executable, "manage.py", "jobs"], environment(**broker, **env))
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


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


def test_a_job_whose_worker_is_killed_mid_run_is_run_again_and_recorded(clusters):
    cluster = clusters()
    run_id, token = queue("stall_first_attempt")
    worker = attempt(token, 1)

    os_kill(worker)

    assert wait_for(lambda: done(token), RECOVERY_SECONDS), f"the job was lost:\n{cluster.log()[-3000:]}"
    run = wait_for(lambda: JobRun.objects.filter(pk=run_id, status=JobRunStatus.SUCCEEDED).first(), 30)
    assert run is not None and run.attempts == 2
    assert f"pid {worker}" in run.error and "died" in run.error


def test_a_job_killed_on_every_attempt_is_failed_with_the_reason_after_the_last(clusters):
    cluster = clusters(EUNICE_JOB_MAX_ATTEMPTS="2")
    run_id, token = queue("stall_always")
    os_kill(attempt(token, 1))
    os_kill(attempt(token, 2, RECOVERY_SECONDS))

    run = wait_for(lambda: JobRun.objects.filter(pk=run_id, status=JobRunStatus.FAILED).first(), RECOVERY_SECONDS)

    assert run is not None, f"the job was never failed:\n{cluster.log()[-3000:]}"
    assert run.attempts == 2 and "worker died during each of 2 attempt(s)" in run.error
    time.sleep(3)
    assert not SeedLog.objects.filter(key=f"job-attempt:{token}:3").exists()


def test_killing_the_clusters_main_process_leaves_no_orphan_and_the_next_cluster_reruns_the_job(clusters):
    first = clusters()
    run_id, token = queue("stall_first_attempt")
    attempt(token, 1)
    family = children(first.pid)

    first.signal(signal.SIGKILL)

    assert wait_for(lambda: not any(alive(pid) for pid in family), 15), "cluster processes outlived their parent"
    clusters()
    assert wait_for(lambda: done(token), START_SECONDS), "the job was not re-run by the next cluster"
    assert JobRun.objects.get(pk=run_id).attempts == 2


def test_sigterm_stops_a_cluster_busy_with_a_job_within_its_bound_and_the_job_reruns_later(clusters):
    first = clusters(EUNICE_JOBS_STOP_SECONDS="3")
    run_id, token = queue("stall_first_attempt")
    attempt(token, 1)
    family = children(first.pid)

    began = time.monotonic()
    first.signal(signal.SIGTERM)
    code = first.wait(30)

    assert code is not None, "the cluster was still running 30 s after SIGTERM"
    assert time.monotonic() - began < 3 + 10
    assert wait_for(lambda: not any(alive(pid) for pid in family), 5)
    clusters()
    assert wait_for(lambda: done(token), START_SECONDS), "the interrupted job was not re-run"


def test_a_tool_build_left_building_is_failed_with_the_reason_when_the_cluster_starts(clusters):
    job = ToolJob.objects.create(
        tool_name="half_built",
        job_type=JobType.BUILD,
        tenant_id="acme",
        status=JobStatus.BUILDING,
        progress_pct=40,
        spec={"request": "add one"},
    )

    clusters()

    failed = wait_for(lambda: ToolJob.objects.filter(pk=job.pk, status=JobStatus.FAILED).first(), START_SECONDS)
    assert failed is not None, "the stranded build was left building"
    assert "worker" in failed.result["error"] and "request it again" in failed.result["error"]


def os_kill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)

"""A django-q2 worker killed mid-job: the job is re-run or failed, never lost; a build left
building is failed when the cluster starts. One cluster serves the module (the sentinel replaces
the workers a test kills); test_jobs_whole_cluster.py kills or stops whole clusters of its own."""

import signal
import time

import pytest

from registry.models import JobRun, JobRunStatus, JobStatus, JobType, SeedLog, ToolJob
from tests.faults.jobs_cast import RECOVERY_SECONDS, START_SECONDS, attempt, done, queue, start_cluster
from tests.faults.operator import Process, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

_shared: list[Process] = []  # the module's cluster, once started


@pytest.fixture(scope="module")
def cluster(django_db_setup, django_db_blocker):
    """One cluster for the tests that only kill its workers (the sentinel replaces them)."""
    with django_db_blocker.unblock():
        started = start_cluster("jobs-shared", EUNICE_JOB_MAX_ATTEMPTS="2")
    _shared.append(started)
    yield started
    _shared.clear()
    started.stop()


def test_a_tool_build_left_building_is_failed_with_the_reason_when_the_cluster_starts(request, clusters):
    already_up = bool(_shared)  # run after a test that started the module's cluster (-k, another order)
    job = ToolJob.objects.create(
        tool_name="half_built",
        job_type=JobType.BUILD,
        tenant_id="acme",
        status=JobStatus.BUILDING,
        progress_pct=40,
        spec={"request": "add one"},
    )

    if already_up:
        clusters()
    else:
        request.getfixturevalue("cluster")  # the module's cluster starts now, the stranded build in the table

    failed = wait_for(lambda: ToolJob.objects.filter(pk=job.pk, status=JobStatus.FAILED).first(), START_SECONDS)
    assert failed is not None, "the stranded build was left building"
    assert "worker" in failed.result["error"] and "request it again" in failed.result["error"]


def test_a_job_whose_worker_is_killed_mid_run_is_run_again_and_recorded(cluster):
    run_id, token = queue("stall_first_attempt")
    worker = attempt(token, 1)

    os_kill(worker)

    assert wait_for(lambda: done(token), RECOVERY_SECONDS), f"the job was lost:\n{cluster.log()[-3000:]}"
    run = wait_for(lambda: JobRun.objects.filter(pk=run_id, status=JobRunStatus.SUCCEEDED).first(), 30)
    assert run is not None and run.attempts == 2
    assert f"pid {worker}" in run.error and "died" in run.error


def test_a_job_killed_on_every_attempt_is_failed_with_the_reason_after_the_last(cluster):
    run_id, token = queue("stall_always")
    os_kill(attempt(token, 1))
    os_kill(attempt(token, 2, RECOVERY_SECONDS))

    run = wait_for(lambda: JobRun.objects.filter(pk=run_id, status=JobRunStatus.FAILED).first(), RECOVERY_SECONDS)

    assert run is not None, f"the job was never failed:\n{cluster.log()[-3000:]}"
    assert run.attempts == 2 and "worker died during each of 2 attempt(s)" in run.error
    time.sleep(3)
    assert not SeedLog.objects.filter(key=f"job-attempt:{token}:3").exists()


def os_kill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)

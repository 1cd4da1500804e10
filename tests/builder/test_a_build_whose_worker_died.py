"""A tool build whose worker died under it starts over, or is failed with the reason after the last attempt."""

import os
import subprocess

import pytest

from registry.background import HOST, reap_lost_runs
from registry.models import JobRun, JobRunStatus, JobStatus, JobType, ToolJob
from registry.tool_jobs import JOB_FUNCTION

pytestmark = pytest.mark.django_db


def a_dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def building(attempts: int) -> tuple[ToolJob, JobRun]:
    job = ToolJob.objects.create(
        tool_name="plus_one",
        job_type=JobType.BUILD,
        tenant_id="acme",
        status=JobStatus.BUILDING,
        progress_pct=40,
        spec={"request": "add one"},
    )
    run = JobRun.objects.create(
        func=JOB_FUNCTION, args=[job.pk], status=JobRunStatus.RUNNING, host=HOST, pid=a_dead_pid(), attempts=attempts
    )
    return job, run


def test_a_build_whose_worker_died_is_queued_again_from_the_start(django_capture_on_commit_callbacks, settings):
    settings.EUNICE_JOB_MAX_ATTEMPTS = 2
    job, run = building(attempts=1)

    with django_capture_on_commit_callbacks(execute=True) as pushed:
        assert reap_lost_runs() == (1, 0)

    job.refresh_from_db()
    run.refresh_from_db()
    assert (job.status, job.progress_pct) == (JobStatus.QUEUED, 0)
    assert run.status == JobRunStatus.QUEUED and f"pid {run.pid}) died" in run.error
    assert len(pushed) == 1  # the run went back to the broker


def test_a_build_whose_worker_died_on_its_last_attempt_is_failed_saying_why(settings):
    settings.EUNICE_JOB_MAX_ATTEMPTS = 2
    job, run = building(attempts=2)

    assert reap_lost_runs() == (0, 1)

    job.refresh_from_db()
    run.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.result["error"].startswith("the build stopped: its worker died during each of 2 attempt(s)")
    assert run.status == JobRunStatus.FAILED and run.finished_at is not None


def test_a_run_whose_worker_is_alive_is_left_alone():
    job, run = building(attempts=1)
    JobRun.objects.filter(pk=run.pk).update(pid=os.getpid(), process_started="")

    assert reap_lost_runs() == (0, 0)
    assert ToolJob.objects.get(pk=job.pk).status == JobStatus.BUILDING

"""A django-q2 cluster (a real qcluster process) picks the job up and builds the tool."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from registry.models import JobStatus, ToolDefinition, ToolJob, ToolStatus
from tests.builder.conftest import APPROVE, PLUS_ONE, TEST_KEY, auditor_turn, builder_turn
from tests.test_background_jobs import ROOT, database_url, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_queued_build_is_run_by_a_qcluster_worker_against_the_scripted_model(models, build, staff, custom_tools_on):
    server = models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    assert build("plus_one", user_id=staff.pk).error is None
    job = ToolJob.objects.get(tool_name="plus_one")

    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": server.url,
        "EUNICE_LLM_MAX_RETRIES": "0",
    }
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        done = wait_for(
            lambda: (
                ToolJob.objects.filter(pk=job.pk, progress_pct=100).exists()
                or ToolJob.objects.filter(pk=job.pk, status=JobStatus.FAILED).exists()
            ),
            90,
        )
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    job.refresh_from_db()
    assert done, f"the worker never finished the build (job is {job.status}, {job.progress_pct}%)"
    assert job.status == JobStatus.TESTING, job.result
    assert job.result["audit_passed"] is True, job.result  # the sandbox ran the cases inside the worker
    assert ToolDefinition.objects.get(name="plus_one").status == ToolStatus.TESTING
    assert len(server.requests) == 2

"""A job cluster killed or stopped as a whole mid-job: no orphan, and the next cluster re-runs the job.

Each test starts clusters of its own (tests/faults/test_jobs.py shares one for the tests that
only kill its workers): a cluster left running would take these tests' jobs.
"""

import signal
import time

import pytest

from registry.models import JobRun
from tests.faults.jobs_cast import START_SECONDS, attempt, done, queue
from tests.faults.operator import alive, children, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


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

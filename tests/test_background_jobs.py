import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from registry.context import ToolContext
from registry.models import SeedLog
from tests import jobs
from tests.conftest import text

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.django_db(transaction=True)
def test_a_job_queued_by_an_async_handler_under_a_running_loop_completes(registry, make_tool):
    make_tool("queue_marker", jobs.queue_marker, input_schema={"type": "object"})
    token = uuid.uuid4().hex

    async def dispatch_from_a_running_loop():
        return await registry.aexecute_tool("queue_marker", {"token": token}, ToolContext(tenant_id="acme"))

    result = asyncio.run(dispatch_from_a_running_loop())
    assert text(result).startswith("queued"), result.content

    # The worker must share the database and the key tasks are signed with.
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
    }
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        done = wait_for(lambda: SeedLog.objects.filter(key=f"job-done:{token}").exists(), 60)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert done, "the django-q2 worker never ran the queued job"


@pytest.mark.django_db
def test_a_task_an_async_handler_leaves_running_is_not_torn_down_when_it_returns(call, make_tool):
    jobs.detached_done.clear()
    make_tool("detach", jobs.start_detached_task)
    assert text(call("detach")) == "started"
    assert jobs.detached_done.wait(timeout=5), "the detached task was reaped with its loop"

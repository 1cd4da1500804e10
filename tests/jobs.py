"""Functions django-q2 workers run in the background-job tests."""

import asyncio
import threading

from registry.background import aenqueue

detached_done = threading.Event()


def write_marker(token: str) -> str:
    from registry.models import SeedLog

    SeedLog.objects.create(key=f"job-done:{token}", value={"token": token})
    return token


async def queue_marker(inputs, context):
    task_id = await aenqueue("tests.jobs.write_marker", inputs["token"])
    return f"queued {task_id}"


async def _finish_later():
    await asyncio.sleep(0.01)
    detached_done.set()


async def start_detached_task(inputs, context):
    asyncio.get_running_loop().create_task(_finish_later())
    return "started"

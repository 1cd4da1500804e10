"""Handlers used by the dispatch tests; each exists to show one behaviour."""

import asyncio
import threading

released = threading.Event()


def echo(inputs, context):
    return {"message": f"echo {inputs}", "metadata": {"reasoning": context.get("_reasoning")}}


def boom(inputs, context):
    raise ZeroDivisionError("division by zero in step 3")


def slow(inputs, context):
    released.wait(5)
    return "finally"


async def async_echo(inputs, context):
    await asyncio.sleep(0)
    return f"async {inputs.get('word', '')}"


async def async_slow(inputs, context):
    await asyncio.sleep(30)
    return "never"


async def nap(inputs, context):
    await asyncio.sleep(inputs.get("seconds", 0.3))
    return f"rested {inputs.get('seconds', 0.3)}"


def blocking_nap(inputs, context):
    import time

    time.sleep(inputs.get("seconds", 0.3))
    return "rested"


def flaky(inputs, context):
    raise ConnectionError("upstream refused the connection")


def with_side_channels(inputs, context):
    from registry.result import ToolResult

    return ToolResult(
        content="made a file",
        cards=[{"type": "chart", "spec": {}}, {"type": "cited_answer", "n": 1}],
        cost=0.25,
        exports={"report.csv": {"path": "/tmp/report.csv", "mime_type": "text/csv", "size_bytes": 12}},
        datasets={"sales": [{"region": "north", "total": 3}]},
    )

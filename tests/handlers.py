"""Handlers used by the dispatch tests; each exists to show one behaviour."""

import asyncio
import threading

released = threading.Event()


def echo(inputs, context):
    return {"message": f"echo {inputs}", "metadata": {"reasoning": context.reasoning}}


def boom(inputs, context):
    raise ZeroDivisionError("division by zero in step 3")


def slow(inputs, context):
    released.wait(5)
    return "finally"


async def async_echo(inputs, context):
    await asyncio.sleep(0)
    return f"async {inputs.get('word', '')}"


# Two calls meet here only if they run at the same time: run one after the other,
# the first waits out its bound alone and fails with BrokenBarrierError.
meeting = threading.Barrier(2)


async def meet(inputs, context):
    await asyncio.to_thread(meeting.wait, inputs.get("seconds", 30))
    return "met"


def blocking_meet(inputs, context):
    meeting.wait(inputs.get("seconds", 30))
    return "met"


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
    from eunice.tenant_files import new_generated_path
    from registry.result import ToolResult

    path, _ = new_generated_path(context.tenant_id, "report", "csv")
    path.write_text("region,total\n")
    return ToolResult(
        content="made a file",
        cards=[{"type": "chart", "spec": {}}, {"type": "cited_answer", "n": 1}],
        cost=0.25,
        exports={"report.csv": {"path": str(path), "mime_type": "text/csv", "size_bytes": 12}},
        datasets={"sales": [{"region": "north", "total": 3}]},
    )


def exports_a_server_file(inputs, context):
    """A result naming a file outside the tenant's directories (here the settings module)."""
    from pathlib import Path

    import eunice.settings
    from registry.result import ToolResult

    target = str(Path(eunice.settings.__file__).resolve())
    return ToolResult(
        content="here is a file",
        cards=[{"type": "file_download", "export": "settings.py", "filename": "settings.py"}],
        exports={"settings.py": {"path": target, "mime_type": "text/plain", "size_bytes": 1}},
    )

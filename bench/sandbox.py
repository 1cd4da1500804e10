#!/usr/bin/env python
"""Custom-tool calls through the real path: execute_tool of an approved tool in a
conversation whose catalog holds a dataset (``df``), as the conversation runtime calls it.

    bench/sandbox.py [--runs N] [--rows N] [--json] [--database-url URL]

- warm_p50_ms / warm_p95_ms: one call while the zygote is up (N calls after one warm-up).
- cold_ms: the first call in a fresh process that has just started the server
  (a subprocess importing eunice.asgi, as uvicorn does: Django, the URLconf, every
  system tool's module and, by default, the sandbox's zygote: EUNICE_PRELOAD_SANDBOX);
  server_start_ms is that start, not counted.
- cold_lazy_ms: the same with EUNICE_PRELOAD_SANDBOX=0, so the first call starts the
  zygote (interpreter, imports, warm-up); cold_lazy_second_ms: the next call there,
  so the difference is what a lazy first call pays once.
Creating the conversation, uploading the dataset and approving the tool are excluded.

Done: warm p95 <= 150 ms, cold <= 1 s. Goal: warm p95 <= 50 ms, cold <= 500 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TOOL = """
d = df.copy()
d['revenue'] = d['units'] * d['price']
result = d.groupby('region')['revenue'].sum().round(2)
"""
TENANT, CONVERSATION, TOOL_NAME = "bench", "conv-bench", "revenue_by_region"


def _environment(scratch: str, files: str) -> None:
    os.environ["EUNICE_CUSTOM_TOOLS"] = "1"
    os.environ["EUNICE_SANDBOX_SCRATCH"] = scratch
    os.environ["EUNICE_FILES_DIR"] = files


def _prepare(rows: int) -> str:
    """A user, a conversation with ``sales`` uploaded, the tool approved; returns the user's id."""
    from django.contrib.auth import get_user_model

    from conversations.models import Conversation
    from datacatalog.store import ConversationCatalog
    from datacatalog.uploads import upload_dataset
    from registry.custom_tools import approve_custom_tool, register_custom_tool

    user_model = get_user_model()
    owner = user_model.objects.create_user("bench-owner", password="-")
    staff = user_model.objects.create_user("bench-staff", password="-", is_staff=True, is_superuser=True)
    Conversation.objects.create(id=CONVERSATION, tenant_id=TENANT, user=owner)
    lines = ["region,units,price"] + [
        f"{('north', 'south', 'east')[i % 3]},{i % 17},{1.5 + i % 5}" for i in range(rows)
    ]
    upload_dataset(ConversationCatalog(TENANT, CONVERSATION), "sales.csv", "\n".join(lines).encode())
    tool = register_custom_tool(
        name=TOOL_NAME,
        code=TOOL,
        description="Revenue by region.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=TENANT,
    )
    approve_custom_tool(tool, acting_user=staff)
    return str(owner.pk)


def _call_once(user_id: str) -> float:
    """One execute_tool of the approved tool with the runtime's context; its wall time in ms."""
    from django.contrib.auth import get_user_model

    from conversations.models import Conversation
    from conversations.runtime import start_run
    from registry.registry import get_registry

    conversation = Conversation.objects.get(pk=CONVERSATION)
    runtime = start_run(conversation, user=get_user_model().objects.get(pk=user_id), turn=1)
    context = runtime.tool_context("toolu_bench", TOOL_NAME, None)
    started = time.perf_counter()
    result = get_registry().execute_tool(TOOL_NAME, {}, context)
    elapsed = (time.perf_counter() - started) * 1000
    if result.error is not None or "north" not in result.content:
        raise SystemExit(f"the tool failed: {result.content}")
    return elapsed


def _cold(database_url: str, user_id: str, preload: bool) -> None:
    """Subprocess: start the server's application, make two calls, print the timings as JSON."""
    started = time.perf_counter()
    import _django

    os.environ["DATABASE_URL"] = database_url
    os.environ["EUNICE_PRELOAD_TOOL_SEARCH"] = "0"  # embedding models: nothing to do with the sandbox
    os.environ["EUNICE_PRELOAD_SANDBOX"] = "1" if preload else "0"
    sys.path.insert(0, str(_django.ROOT))
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "eunice.settings")
    import eunice.asgi  # noqa: F401 - the server's own start (the zygote too, when preloading)
    from eunice.preload import wait

    wait(300)  # the zygote starts on the preload thread

    start_ms = (time.perf_counter() - started) * 1000
    first = _call_once(user_id)
    second = _call_once(user_id)
    if preload:
        print(json.dumps({"cold_ms": first, "server_start_ms": start_ms}))
    else:
        print(json.dumps({"cold_lazy_ms": first, "cold_lazy_second_ms": second, "server_start_lazy_ms": start_ms}))


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1000, help="rows of the conversation's dataset")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    parser.add_argument("--cold-call", nargs=3, metavar=("DATABASE_URL", "USER_ID", "PRELOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_call:
        _cold(args.cold_call[0], args.cold_call[1], args.cold_call[2] == "1")
        return
    scratch, files = tempfile.mkdtemp(prefix="eunice-bench-sbx-"), tempfile.mkdtemp(prefix="eunice-bench-files-")
    _environment(scratch, files)
    import _django
    from _machine import reference_ms

    database = _django.setup(args.database_url)
    user_id = _prepare(args.rows)
    cold = {}
    for preload in ("0", "1"):
        cold.update(
            json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--cold-call", os.environ["DATABASE_URL"], user_id, preload],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=os.environ.copy(),
                    timeout=300,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
        )
    _call_once(user_id)  # the zygote starts here: not a warm call
    warm = [_call_once(user_id) for _ in range(args.runs)]
    from registry.sandbox import service

    service.shutdown()
    results = {
        "warm_p50_ms": statistics.median(warm),
        "warm_p95_ms": _percentile(warm, 0.95),
        **cold,
        "runs": args.runs,
        "dataset_rows": args.rows,
        "database": database,
        "machine_reference_ms": reference_ms(),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()

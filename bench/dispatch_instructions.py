"""Instructions per `execute_tool` call, counted by callgrind: a figure the machine's load does not move.

Runs bench/dispatch.py's inline `add` --calls times (after warm-up calls) in a child
process under `valgrind --tool=callgrind --instr-atstart=no`; the child turns the
instrumentation on (`callgrind_control -i on`) around the timed calls only, so Django's
set-up and the migrations are not counted. With --log the execution log is on and no
writer thread runs: every row is written by one flush at the end, counted too (the
warm-up's flush has prepared the 500-row statement before). Prints instructions a
call, rounded down; the few thousand of the two callgrind_control calls are included.
With --context it counts instead what a turn spends on each tool call's ToolContext
(``Runtime.tool_context`` of an interactive turn), the same way.

Usage: python bench/dispatch_instructions.py [--calls N] [--log | --context] [--database-url URL]
Needs valgrind (callgrind_control comes with it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import _django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--log", action="store_true")
    parser.add_argument("--context", action="store_true", help="count Runtime.tool_context instead")
    parser.add_argument("--database-url")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        if args.context:
            _contexts(args.calls, args.database_url)
        else:
            _calls(args.calls, args.log, args.database_url)
        return
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, str(Path(__file__).resolve()), "--inner", "--calls", str(args.calls)]
    command += ["--log"] * args.log + ["--context"] * args.context
    command += ["--database-url", args.database_url] if args.database_url else []
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if collected is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    total = int(collected.group(1))
    _django.print_results(
        {
            "calls": args.calls,
            "counted": "Runtime.tool_context" if args.context else "execute_tool",
            "log": args.log,
            "instructions": total,
            "instructions_per_call": total // args.calls,
        },
        as_json=False,
    )


def _calls(calls: int, log: bool, database_url: str | None) -> None:
    _django.setup(database_url)
    from dispatch import install
    from django.test import override_settings

    from registry.context import ToolContext
    from registry.execlog import writer
    from registry.models import ToolDefinition, ToolExecutionLog
    from registry.registry import get_registry

    registry = get_registry()
    install(registry, ("bench_add",))
    context = ToolContext(tenant_id="bench", user_id="bench")
    inputs = {"a": 2, "b": 3}
    rows = writer()
    rows._thread = "none"  # type: ignore[assignment]  # no writer thread: one flush writes every row
    try:
        with override_settings(EXECUTION_LOG_ENABLED=log):
            for _ in range(1000):
                registry.execute_tool("bench_add", inputs, context)
            rows.flush()
            _instrument("on")
            for _ in range(calls):
                registry.execute_tool("bench_add", inputs, context)
            if log:
                rows.flush()
            _instrument("off")
    finally:
        ToolExecutionLog.objects.filter(tenant_id="bench").delete()
        ToolDefinition.objects.filter(name="bench_add").delete()


def _contexts(calls: int, database_url: str | None) -> None:
    _django.setup(database_url, seed=False)
    from django.contrib.auth import get_user_model

    from conversations.models import Conversation
    from conversations.runtime import start_run

    user, _ = get_user_model().objects.get_or_create(username="bench-context")
    conversation = Conversation.objects.create(tenant_id="bench", user=user)
    runtime = start_run(conversation, user=user, turn=1, interactive=True)
    try:
        for n in range(1000):
            runtime.tool_context(f"toolu_{n}", "plan", None, None, "anchor")
        _instrument("on")
        for n in range(calls):
            runtime.tool_context(f"toolu_{n}", "plan", None, None, "anchor")
        _instrument("off")
    finally:
        conversation.delete()


def _instrument(state: str) -> None:
    subprocess.run(["callgrind_control", "-i", state, str(os.getpid())], check=True, capture_output=True)


if __name__ == "__main__":
    main()

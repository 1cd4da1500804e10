"""How long a turn's start waits behind the execution log's writer.

The set-up: a thread keeps the interpreter busy (as a streaming event loop would);
the log's writer thread is woken with ``--rows`` rows of other conversations
buffered; once it has taken them (its batch in flight) one row of the turn's own
conversation is recorded and the turn starts (``DispatchState.for_conversation``,
which counts the conversation's calls). For each of ``--trials`` trials it notes
the writer's batch (from its wake to the batch written) and the turn's start.

Prints, in ms, p50 and p95 over the trials:
  batch_ms   the writer's batch of --rows rows
  turn_ms    the turn's start (its read of the conversation's calls included)
and in_flight: in how many trials the batch was still being written when the
turn's start returned, and counts_exact: in how many the turn counted every
call of its conversation (one more each trial).

Usage: python bench/log_stall.py [--rows 2000] [--trials 30] [--switch-interval S] [--json]
Without DATABASE_URL (or --database-url) it uses a throwaway SQLite file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import _django


def busy(stop: threading.Event) -> None:
    """Pure-Python work that wants the interpreter all the time."""
    while not stop.is_set():
        sum(n * n for n in range(200))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def trial(log, rows: int, conversation, turn: int) -> tuple[float, float, bool, bool]:
    """One batch and one turn start: (batch ms, turn ms, batch still in flight, counts exact)."""
    from django.utils import timezone

    from conversations.state import DispatchState

    now = timezone.now()
    for n in range(rows):
        log.record(("bench_other", "bench", "", f"other-{n % 50}", {"n": n}, "", True, "ok", "", "", 1.0, now))
    log.flushed.clear()
    woken = time.perf_counter()
    while log.pending():  # the writer has taken the batch once the buffer is empty
        # Again until it has: a wake that comes as it finishes the last batch is cleared.
        log._wake.set()
        time.sleep(0.0002)
    log.record(("bench_mine", "bench", "", conversation.pk, {}, "", True, "ok", "", "", 1.0, timezone.now()))
    started = time.perf_counter()
    state = DispatchState.for_conversation(conversation)
    ended = time.perf_counter()
    in_flight = not log.flushed.is_set()
    state.cancel.release()
    if not log.flushed.wait(60):
        raise SystemExit("the writer never finished its batch")
    batch_ms = (time.perf_counter() - woken) * 1000
    log.flush()  # a row the turn left to the writer: the next batch is of other conversations only
    return batch_ms, (ended - started) * 1000, in_flight, sum(state.calls_by_tool.values()) == turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval for the run (default: left as is)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    database = _django.setup(args.database_url, seed=False)
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)

    from conversations.models import Conversation
    from registry import execlog
    from registry.models import ToolExecutionLog

    log = execlog.ExecutionLogWriter(flush_seconds=3600, max_buffer=100_000)
    execlog.writer._value = log  # the writer DispatchState.for_conversation flushes
    log._start()
    conversation = Conversation.objects.create(tenant_id="bench")
    stop = threading.Event()
    spinner = threading.Thread(target=busy, args=(stop,), daemon=True)
    spinner.start()
    batches, turns, in_flight, exact = [], [], 0, 0
    try:
        for turn in range(1, args.trials + 1):
            batch_ms, turn_ms, flying, right = trial(log, args.rows, conversation, turn)
            batches.append(batch_ms)
            turns.append(turn_ms)
            in_flight += flying
            exact += right
    finally:
        stop.set()
        spinner.join()
        log.flush()
        ToolExecutionLog.objects.filter(tenant_id="bench").delete()
        conversation.delete()
    results = {
        "database": database,
        "rows": args.rows,
        "trials": args.trials,
        "switch_interval_ms": sys.getswitchinterval() * 1000,
        "batch_ms_p50": statistics.median(batches),
        "batch_ms_p95": percentile(batches, 0.95),
        "turn_ms_p50": statistics.median(turns),
        "turn_ms_p95": percentile(turns, 0.95),
        "in_flight": f"{in_flight}/{args.trials}",
        "counts_exact": f"{exact}/{args.trials}",
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()

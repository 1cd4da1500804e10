"""Envelope tallies for telemetry: per tool, per kind, per sub-kind."""

from __future__ import annotations

import threading

import pytest

from registry.contract import (
    EnvelopeCounter,
    Err,
    Hint,
    HintException,
    Ok,
    ToolTally,
    classify,
    wrap_for_dispatch,
)

from . import call, fresh_name


def test_classify_names_kind_and_sub_kind() -> None:
    assert classify(Ok(rows=0)) == ("ok", None)
    assert classify(Hint("fetch", "too big")) == ("hint", "fetch")
    assert classify(Err("boom", "ValueError")) == ("err", "ValueError")


def test_classify_refuses_what_is_not_an_envelope() -> None:
    with pytest.raises(TypeError, match="not a contract envelope"):
        classify("✓ ok. 1 row.")  # type: ignore[arg-type]


def test_counter_tallies_per_tool_with_sub_kinds() -> None:
    counter = EnvelopeCounter()
    for envelope in (
        Ok(rows=1),
        Ok(rows=2),
        Hint("schema", "a"),
        Hint("schema", "b"),
        Hint("fetch", "c"),
        Err("x", "legacy"),
    ):
        counter.record("search", envelope)
    counter.record("geocode", Err("y", "TimeoutError"))
    assert counter.snapshot() == {
        "geocode": ToolTally(err=1, err_kinds={"TimeoutError": 1}),
        "search": ToolTally(ok=2, hint=3, err=1, hint_kinds={"schema": 2, "fetch": 1}, err_kinds={"legacy": 1}),
    }


def test_snapshot_leaves_counts_and_drain_resets_them() -> None:
    counter = EnvelopeCounter()
    counter.record("t", Ok(rows=1))
    assert counter.snapshot() == counter.snapshot() == {"t": ToolTally(ok=1)}
    assert counter.drain() == {"t": ToolTally(ok=1)}
    assert counter.snapshot() == {}


def test_concurrent_recording_loses_no_counts() -> None:
    counter = EnvelopeCounter()
    threads_n, per_thread = 8, 2000
    start = threading.Barrier(threads_n, timeout=10)

    def work() -> None:
        start.wait()
        for _ in range(per_thread):
            counter.record("busy", Ok(rows=0))

    threads = [threading.Thread(target=work) for _ in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert counter.snapshot()["busy"].ok == threads_n * per_thread


def test_counter_plugs_in_as_a_dispatch_observer() -> None:
    counter = EnvelopeCounter()
    name = fresh_name()

    def handler(inputs: dict, context: dict) -> str:
        if "table" not in inputs:
            raise HintException("schema", "which table?")
        return "rows"

    dispatch = wrap_for_dispatch(name, handler, observer=counter.record)
    call(dispatch, {"table": "t"})
    call(dispatch)
    assert counter.snapshot()[name] == ToolTally(ok=1, hint=1, hint_kinds={"schema": 1})

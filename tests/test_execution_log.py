import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import pytest
from django.db import connection

from registry.context import ToolContext
from registry.execlog import ExecutionLogWriter
from registry.models import ToolExecutionLog
from tests import handlers
from tests.conftest import text

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def test_a_successful_call_writes_one_row_with_its_context(call, make_tool):
    make_tool("shout", handlers.async_echo)
    call("shout", context={"conversation_id": "c-9", "user_id": "u-7"}, word="hi")
    row = ToolExecutionLog.objects.get()
    assert (row.tool_name, row.tenant_id, row.user_id, row.conversation_id) == ("shout", "acme", "u-7", "c-9")
    assert row.input_data == {"word": "hi"}
    assert row.success is True and row.outcome == "ok" and row.error == ""
    assert row.output_summary == "✓ ok. 1 row.\nasync hi"
    assert row.execution_ms > 0


def test_a_failed_call_writes_a_row_with_the_error(call, make_tool):
    make_tool("divide", handlers.boom)
    call("divide")
    row = ToolExecutionLog.objects.get()
    assert (row.success, row.outcome, row.outcome_kind) == (False, "err", "ZeroDivisionError")
    assert row.error == "division by zero in step 3"


def test_corrections_before_the_handler_runs_are_logged_as_hints_not_failures(call):
    call("no_such_tool")
    call("search_tools", limit="many")
    rows = ToolExecutionLog.objects.order_by("id").values_list("tool_name", "success", "outcome", "outcome_kind")
    assert list(rows) == [
        ("no_such_tool", True, "hint", "schema"),
        ("search_tools", True, "hint", "schema"),
    ]


def test_the_output_summary_keeps_only_the_first_500_characters(call, make_tool):
    make_tool("long", lambda inputs, ctx: "x" * 2000)
    call("long")
    assert ToolExecutionLog.objects.get().output_summary == ("✓ ok. 1 row.\n" + "x" * 2000)[:500]


def test_inputs_json_cannot_express_are_logged_as_their_repr(registry, make_tool):
    make_tool("anything", handlers.echo)
    registry.execute_tool("anything", {"tags": {1}}, ToolContext(tenant_id="acme"))
    assert ToolExecutionLog.objects.get().input_data == {"tags": "{1}"}


def test_inputs_json_cannot_encode_lose_only_their_own_text_not_the_batch(registry, make_tool):
    # Keys JSON cannot express (a tuple) and nesting past the encoder's recursion limit
    # fail the encoder itself. The call's row is kept, saying why its inputs are not,
    # and every other row of the batch is written.
    from registry.execlog import ExecutionLogWriter

    writer = ExecutionLogWriter(flush_seconds=3600, max_buffer=100)
    writer._thread = object()  # keep the background thread out of this test
    deep: dict = {}
    for _ in range(5000):
        deep = {"d": deep}

    class Unprintable:
        def __repr__(self):
            raise RuntimeError("no repr for you")

    make_tool("anything", handlers.echo)
    context = ToolContext(tenant_id="acme")
    bad = [{(1, 2): "tuple key"}, deep, {"thing": Unprintable()}]
    with mock.patch("registry.registry.writer", lambda: writer):
        for n, inputs in enumerate(bad):
            registry.execute_tool("anything", {"n": n}, context)
            registry.execute_tool("anything", inputs, context)
    assert writer.flush() == 6
    logged = list(ToolExecutionLog.objects.order_by("id").values_list("input_data", flat=True))
    assert logged[0::2] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert logged[1] == {"unlogged": "TypeError: keys must be str, int, float, bool or None, not tuple"}
    assert list(logged[3]) == ["unlogged"] and logged[3]["unlogged"].startswith("RecursionError")
    assert logged[5] == {"unlogged": "RuntimeError: no repr for you"}


def test_a_buffered_row_holds_text_not_the_callers_inputs(registry, make_tool):
    # The row keeps what the inputs were when the call ended: a caller changing its dict
    # afterwards does not change the log, and the buffer holds no object the collector walks.
    import gc

    from registry.execlog import ExecutionLogWriter

    writer = ExecutionLogWriter(flush_seconds=3600, max_buffer=100)
    writer._thread = object()
    make_tool("anything", handlers.echo)
    inputs = {"items": ["a"]}
    with mock.patch("registry.registry.writer", lambda: writer):
        registry.execute_tool("anything", inputs, ToolContext(tenant_id="acme"))
    inputs["items"].append("changed later")
    (row,) = writer._buffer
    gc.collect()
    assert not gc.is_tracked(row)
    writer.flush()
    assert ToolExecutionLog.objects.get().input_data == {"items": ["a"]}


def test_failing_to_write_the_log_never_fails_the_call(call, make_tool, caplog):
    make_tool("shout", handlers.async_echo)
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE tool_execution_log RENAME TO tool_execution_log_away")
    try:
        result = call("shout", word="still works")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE tool_execution_log_away RENAME TO tool_execution_log")
    assert text(result) == "async still works"
    assert "could not write 1 execution log row" in caplog.text


def test_no_rows_are_written_when_the_log_is_turned_off(call, settings):
    settings.EXECUTION_LOG_ENABLED = False
    call("search_tools", query="plan")
    assert not ToolExecutionLog.objects.exists()


def log_row(n, conversation_id=""):
    """A row as the registry records one (registry.execlog.LogRow: the columns in order)."""
    from django.utils import timezone

    return (f"t{n}", "acme", "", conversation_id, "{}", "", True, "ok", "", "", 1.0, timezone.now())


@pytest.mark.django_db(transaction=True)
def test_the_background_writer_flushes_buffered_rows_within_its_interval():
    writer = ExecutionLogWriter(flush_seconds=0.05, max_buffer=100)
    for n in range(3):
        writer.record(log_row(n))
    assert writer.flushed.wait(timeout=5), "the writer thread never flushed"
    writer.stop()
    assert ToolExecutionLog.objects.count() == 3


def test_a_writer_whose_interval_drops_to_zero_waits_instead_of_spinning(monkeypatch):
    # A test that turned buffering on and back off once left the thread polling with a
    # 0 s wait: half a core and the GIL, for the rest of the run.
    writer = ExecutionLogWriter(flush_seconds=0.05, max_buffer=100)
    writer._thread = None
    woken = []
    monkeypatch.setattr(writer, "flush", lambda: woken.append(1) or 0)
    writer._start()
    writer.flush_seconds = 0.0
    time.sleep(0.5)
    assert len(woken) <= 3
    writer.stop()


def test_a_full_buffer_sheds_the_oldest_rows_and_counts_them():
    writer = ExecutionLogWriter(flush_seconds=3600, max_buffer=2)
    writer._thread = object()  # keep the background thread out of this test
    for n in range(5):
        writer.record(log_row(n))
    assert writer.dropped == 3
    assert writer.flush() == 2
    assert sorted(ToolExecutionLog.objects.values_list("tool_name", flat=True)) == ["t3", "t4"]


def counted_at_turn_start(conversation_id):
    """The conversation's calls of each tool, as a turn starting now counts them."""
    from conversations.models import Conversation
    from conversations.state import DispatchState

    state = DispatchState.for_conversation(Conversation.objects.get(pk=conversation_id))
    state.cancel.release()
    return dict(state.calls_by_tool)


@pytest.fixture
def log(monkeypatch):
    """The process's log writer for the test, its thread kept out (the test writes its batches),
    and the conversation "mine"."""
    from conversations.models import Conversation
    from registry import execlog

    Conversation.objects.create(id="mine", tenant_id="acme")
    made = ExecutionLogWriter(flush_seconds=3600, max_buffer=100)
    made._thread = object()
    monkeypatch.setattr(execlog.writer, "_value", made)
    return made


class HeldBatch:
    """A batch written on its own thread that stops inside its INSERT until ``release``."""

    def __init__(self, log, monkeypatch):
        from registry import execlog

        self.inside, self.released, self.landed = threading.Event(), threading.Event(), threading.Event()
        insert = execlog._insert

        def held_insert(rows):
            self.inside.set()
            self.released.wait(30)
            insert(rows)

        monkeypatch.setattr(execlog, "_insert", held_insert)
        self.thread = threading.Thread(target=self._write, args=(log,))
        self.thread.start()
        assert self.inside.wait(10), "the batch never started"

    def _write(self, log):
        try:
            log.flush()
        finally:
            self.landed.set()
            connection.close()

    def release(self):
        self.released.set()
        self.thread.join(30)


def test_a_turn_counts_its_calls_still_in_the_buffer_without_writing_them(log):
    log.record(log_row(1, "mine"))
    log.flush()
    log.record(log_row(2, "mine"))
    log.record(log_row(3, "other"))
    assert counted_at_turn_start("mine") == {"t1": 1, "t2": 1}
    assert log.pending() == 2 and ToolExecutionLog.objects.count() == 1  # left to the writer
    log.flush()
    assert counted_at_turn_start("mine") == {"t1": 1, "t2": 1}  # written now, and counted once


@pytest.mark.django_db(transaction=True)
def test_a_turn_does_not_wait_for_a_batch_of_other_conversations_rows(log, monkeypatch):
    for n in range(3):
        log.record(log_row(n, "other"))
    batch = HeldBatch(log, monkeypatch)
    try:
        log.record(log_row(9, "mine"))
        assert counted_at_turn_start("mine") == {"t9": 1}
        assert not batch.landed.is_set()  # the turn did not wait for it
    finally:
        batch.release()
    log.flush()
    assert counted_at_turn_start("mine") == {"t9": 1}
    assert ToolExecutionLog.objects.count() == 4


@pytest.mark.django_db(transaction=True)
def test_a_turn_waits_for_a_batch_holding_its_own_rows_and_counts_them_once(log, monkeypatch):
    log.record(log_row(1, "mine"))
    log.record(log_row(2, "other"))
    batch = HeldBatch(log, monkeypatch)
    counted = []

    def turn():
        try:
            counted.append(counted_at_turn_start("mine"))
        finally:
            connection.close()

    starting = threading.Thread(target=turn)
    try:
        starting.start()
        starting.join(0.3)
        assert starting.is_alive()  # waiting for the batch: its row is in neither the buffer nor the table
    finally:
        batch.release()
    starting.join(30)
    assert counted == [{"t1": 1}]


def test_buffered_rows_are_written_when_the_process_exits(tmp_path):
    database = tmp_path / "exit.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "SECRET_KEY": "exit-test",
        "EUNICE_LOG_FLUSH_SECONDS": "3600",  # nothing would flush before exit
        "DJANGO_SETTINGS_MODULE": "eunice.settings",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (["migrate", "-v0"], ["seed_tools", "-v0"]):
        subprocess.run(manage + command, env=env, cwd=ROOT, check=True, timeout=120)
    script = (
        "from registry.context import ToolContext\n"
        "from registry.registry import execute_tool\n"
        "from registry.execlog import writer\n"
        # A call that needs no search index (embedding every tool would cost the test
        # most of its time on a loaded machine, and it is about the log, not the tool).
        "execute_tool('list_trained_models', {}, ToolContext(tenant_id='acme'))\n"
        "assert writer().pending() == 1, writer().pending()\n"
    )
    subprocess.run(manage + ["shell", "-c", script], env=env, cwd=ROOT, check=True, timeout=120)
    with sqlite3.connect(database) as db:
        rows = db.execute("select tool_name, success from tool_execution_log").fetchall()
    assert rows == [("list_trained_models", 1)]


def test_a_rows_time_is_stored_as_the_databases_own_adapter_would_store_it():
    from datetime import UTC, datetime, timedelta, timezone

    from registry.execlog import _datetime_adapter

    adapt = _datetime_adapter()
    now = datetime.now(UTC)
    for moment in (now, now.replace(microsecond=0), now.astimezone(timezone(timedelta(hours=-5)))):
        assert adapt(moment) == connection.ops.adapt_datetimefield_value(moment)


def test_every_time_of_a_batch_is_stored_as_the_databases_own_adapter_would_store_it():
    from datetime import UTC, datetime, timedelta

    from registry.execlog import _datetime_adapter

    adapt = _datetime_adapter()
    start = datetime(2026, 12, 5, 23, 59, 58, 999_990, tzinfo=UTC)
    moments = [start + timedelta(microseconds=step * 7) for step in range(600)]  # across two seconds and a day
    moments += [
        datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),
        datetime(2200, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC),
    ]
    assert [adapt(moment) for moment in moments] == [
        connection.ops.adapt_datetimefield_value(moment) for moment in moments
    ]


def test_the_inputs_of_a_batch_are_stored_as_the_log_fields_encoder_writes_them():
    from datetime import UTC, datetime
    from decimal import Decimal

    from registry.execlog import encode_inputs
    from registry.models import LenientJSONEncoder

    values = [
        {"a": 2, "b": 3},
        {"city": "Zürich", "days": 3.5, "tags": ["x", None, True], "nan": float("nan"), "big": 10**30},
        {"when": datetime(2026, 12, 5, tzinfo=UTC), "price": Decimal("1.10"), "raw": b"\x00", "set": {1}},
        {"nested": {"deeper": [{"k": "v"}]}},
        "plain text",
        [],
        {},
    ]
    assert [encode_inputs(value) for value in values] == [LenientJSONEncoder().encode(value) for value in values]


def test_a_call_made_while_the_log_is_turned_off_by_a_settings_override_writes_no_row(call, make_tool, settings):
    make_tool("shout", handlers.echo)
    settings.EXECUTION_LOG_ENABLED = False
    call("shout", word="quiet")
    settings.EXECUTION_LOG_ENABLED = True
    call("shout", word="loud")
    assert [row.input_data for row in ToolExecutionLog.objects.all()] == [{"word": "loud"}]


@pytest.mark.parametrize("rows", [1, 3, 499, 500, 777, 1337])
def test_a_batch_of_any_size_is_written_whole_and_in_order(rows):
    # Written in statements of fixed sizes (registry.execlog._chunks), whatever the batch.
    writer = ExecutionLogWriter(flush_seconds=3600, max_buffer=10_000)
    writer._thread = object()  # keep the background thread out of this test
    for n in range(rows):
        writer.record(log_row(n))
    assert writer.flush() == rows
    assert list(ToolExecutionLog.objects.order_by("id").values_list("tool_name", flat=True)) == [
        f"t{n}" for n in range(rows)
    ]

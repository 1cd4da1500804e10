"""The execution log writer: one row per tool call, written in batches.

A row is appended to an in-memory buffer on the caller's thread (a few µs) and
a daemon thread writes the buffer with one bulk INSERT every
``EXECUTION_LOG_FLUSH_SECONDS``. The buffer is also flushed at interpreter
exit. A hard kill (SIGKILL, power loss) loses at most the rows of the last
flush interval (or of the last 1,000-row batch, whichever is sooner). With a flush interval
of 0 every row is written at once on the caller's thread. Writing the log never fails a tool call.
A turn counts its conversation's rows not yet written from memory (``unwritten``): it writes
nothing, and waits only for a batch in flight that holds one of them.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from json import encoder as json_encoder
from typing import Any, Final

from django.db import DatabaseError, close_old_connections, connection, transaction

from registry.lazy import Lazy

logger = logging.getLogger("eunice.registry")

SUMMARY_CHARS = 500
BATCH_ROWS = 1000  # a buffer this long is written before the interval is up


_COLUMNS = (
    "tool_name",
    "tenant_id",
    "user_id",
    "conversation_id",
    "input_data",
    "output_summary",
    "success",
    "outcome",
    "outcome_kind",
    "error",
    "execution_ms",
    "created_at",
)
# One call's row, its values in ``_COLUMNS`` order: the inputs as JSON text
# (``encode_inputs``) and an aware ``created_at``. A tuple, not a dict of the names: every
# call with the log on builds one on the caller's thread and the buffer keeps it. It
# holds only strings, numbers and a datetime, so the collector stops tracking it at its
# first young collection: a buffer of 10,000 rows is not walked, nor promoted to the old
# generation to make its full collections come sooner.
LogRow = tuple[str, str, str, str, str, str, bool, str, str, str, float, datetime]
# Indexes of the columns a turn reads from buffered rows (literals: mypy types the values).
_TOOL: Final = 0
_CONVERSATION: Final = 3
_OUTCOME: Final = 7
assert (_COLUMNS[_TOOL], _COLUMNS[_CONVERSATION], _COLUMNS[_OUTCOME]) == ("tool_name", "conversation_id", "outcome")


class ExecutionLogWriter:
    def __init__(self, flush_seconds: float, max_buffer: int) -> None:
        self.flush_seconds = flush_seconds
        self.max_buffer = max_buffer
        self._buffer: deque[LogRow] = deque()
        self._flush_lock = threading.Lock()  # one batch at a time
        # Guards taking rows out of the buffer and ``_in_flight`` (the conversation ids of
        # the batch being written), and wakes a turn waiting for that batch to land.
        self._taking = threading.Condition(threading.Lock())
        self._in_flight: frozenset[str] = frozenset()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.dropped = 0
        self.flushed = threading.Event()  # set after every successful batch (tests wait on it)

    def record(self, row: LogRow) -> None:
        """Queue one log row; never raises."""
        if self.flush_seconds <= 0:
            self._write([row])
            return
        if len(self._buffer) >= self.max_buffer:
            # The database is not keeping up; shed the oldest row rather than
            # grow without bound or slow every tool call down.
            self._buffer.popleft()
            self.dropped += 1
        self._buffer.append(row)
        if self._thread is None:
            self._start()
        elif len(self._buffer) >= BATCH_ROWS and not self._wake.is_set():
            # A burst: write now rather than at the next tick. Once: setting the event
            # takes its lock, and every row recorded until the writer wakes would pay it.
            self._wake.set()

    def flush(self) -> int:
        """Write every buffered row on the calling thread; returns how many. Returns
        once a batch another thread is writing has landed too."""
        with self._flush_lock:
            rows = self._take_all()
            try:
                if rows:
                    self._write(rows)
            finally:
                with self._taking:
                    self._in_flight = frozenset()
                    self._taking.notify_all()
            return len(rows)

    def _take_all(self) -> list[LogRow]:
        """Every buffered row, in order, marked in flight (by conversation) until written."""
        buffer = self._buffer
        with self._taking:
            rows = []
            while buffer:  # record() appends without a lock: each popleft is atomic
                rows.append(buffer.popleft())
            self._in_flight = frozenset([row[_CONVERSATION] for row in rows])
        return rows

    @contextlib.contextmanager
    def unwritten(self, conversation_id: str) -> Iterator[list[tuple[str, str]]]:
        """The ``(tool_name, outcome)`` of each of the conversation's calls not yet in the
        table, held back from the writer while the caller reads the table, so the two
        together count every call exactly once (a turn counts its conversation's calls).

        Nothing is written on the caller's thread, and a batch of other conversations'
        rows being written is not waited for: only a batch holding a row of this
        conversation is (those rows are neither in the buffer nor yet in the table).
        Rows recorded after this returns are in neither. The rows held go back to the
        head of the buffer (they are older than any recorded since) on leaving."""
        # Always under the lock: the writer empties the buffer before it names the
        # conversations it took, and a look between the two would see neither.
        with self._taking:
            while conversation_id in self._in_flight:
                self._taking.wait()
            held = self._take(conversation_id)
        try:
            yield [(row[_TOOL], row[_OUTCOME]) for row in held]
        finally:
            if held:
                with self._taking:
                    self._buffer.extendleft(reversed(held))

    def _take(self, conversation_id: str) -> list[LogRow]:
        """The conversation's buffered rows, taken out in order, the others left in theirs.
        Called holding ``_taking``: the writer takes no row meanwhile."""
        buffer = self._buffer
        if not any(row[_CONVERSATION] == conversation_id for row in tuple(buffer)):
            return []
        mine: list[LogRow] = []
        others: list[LogRow] = []
        for _ in range(len(buffer)):  # rows recorded meanwhile are left at the tail
            try:
                row = buffer.popleft()
            except IndexError:  # record() shed the oldest rows meanwhile
                break
            (mine if row[_CONVERSATION] == conversation_id else others).append(row)
        buffer.extendleft(reversed(others))
        return mine

    def pending(self) -> int:
        return len(self._buffer)

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        self.flush()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="execution-log-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            # An interval turned to 0 (rows now written as they come) leaves the thread
            # waiting to be woken: a 0 s wait would spin, holding the GIL, for good.
            self._wake.wait(self.flush_seconds if self.flush_seconds > 0 else None)
            try:
                self.flush()
            finally:
                # Cleared after the flush, not before: a row recorded while it writes (the
                # buffer still full) would set it again, for a second flush of a few rows
                # on a new connection with none of its statements prepared.
                self._wake.clear()
                close_old_connections()

    def _write(self, rows: list[LogRow]) -> None:
        try:
            # A savepoint: a failed INSERT must not poison a caller's transaction.
            with transaction.atomic():
                _insert(rows)
        except DatabaseError as exc:
            self.dropped += len(rows)
            logger.warning("could not write %d execution log row(s): %s", len(rows), exc)
            return
        except Exception:  # the log must never take a tool call down with it
            self.dropped += len(rows)
            logger.exception("unexpected error writing %d execution log row(s)", len(rows))
            return
        self.flushed.set()


_ROWS_PER_STATEMENT = 500  # 6,000 parameters: inside SQLite's limit (32,766 since 3.32)


def _insert(rows: list[LogRow]) -> None:
    """Write ``rows`` with COPY on PostgreSQL and multi-row INSERTs elsewhere.

    The ORM's bulk_create costs ~40 µs a row (model construction, field
    preparation, client-side query building); these paths cost a few.
    """
    from registry.models import ToolExecutionLog

    ops = connection.ops
    table = ops.quote_name(ToolExecutionLog._meta.db_table)
    columns = ", ".join(ops.quote_name(c) for c in _COLUMNS)
    native = connection.vendor == "sqlite"
    values = _values(rows, plain=native)
    with connection.cursor() as cursor, connection.wrap_database_errors:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
            return
        # SQLite's own cursor takes its own placeholders: Django's wrapper would rewrite
        # every ``%s`` of a 6,000-parameter statement with a regular expression first
        # (3 µs a row of the 24 the write cost, on a loaded machine). Django's
        # SQLiteCursorWrapper.execute does so too, whatever the placeholders: the
        # driver's own method (sqlite3.Cursor's) is called on it, past the rewrite.
        execute = functools.partial(sqlite3.Cursor.execute, cursor.cursor) if native else cursor.execute
        row_sql = "(" + ", ".join(["?" if native else "%s"] * len(_COLUMNS)) + ")"
        for start, size in _chunks(len(values)):
            chunk = values[start : start + size]
            params = [value for row in chunk for value in row]
            sql = f"INSERT INTO {table} ({columns}) VALUES " + ", ".join([row_sql] * size)
            execute(sql, params)


def _chunks(total: int) -> list[tuple[int, int]]:
    """``(start, size)`` of each INSERT for ``total`` rows: ``_ROWS_PER_STATEMENT`` at a
    time, then the rest in powers of two. So a batch of any size takes a statement
    the connection has prepared before (the driver caches them by their text):
    preparing a new 500-row statement cost more than writing its rows, and the
    writer's batches come in every size."""
    chunks = []
    start = 0
    size = _ROWS_PER_STATEMENT
    while start < total:
        while size > total - start:
            size = 1 << ((total - start).bit_length() - 1)  # the largest power of two that fits
        chunks.append((start, size))
        start += size
    return chunks


def _values(rows: list[LogRow], *, plain: bool = False) -> list[tuple]:
    """The column values of ``rows``: the time as the database takes it, and with
    ``plain`` (SQLite) ``success`` as 1 or 0, what SQLite stores for a bool: its driver
    binds an exact int, float or str at once, and asks its adapters for anything else,
    a failed attribute lookup (an exception) a value. The rest is as recorded.

    One date adapter serves the whole batch: looking it up again for every
    row cost more than the INSERT itself.
    """
    adapt = _datetime_adapter()
    truth = int if plain else bool
    return [
        (
            tool,
            tenant,
            user,
            conversation,
            inputs,
            summary,
            truth(success),
            outcome,
            kind,
            error,
            ms,
            adapt(created),
        )
        for tool, tenant, user, conversation, inputs, summary, success, outcome, kind, error, ms, created in rows
    ]


def encode_inputs(inputs: object) -> str:
    """A call's inputs as the log keeps them: JSON text, values JSON cannot express
    (sets, bytes, objects) as their repr (``LenientJSONEncoder``). Never raises: inputs
    the encoder itself cannot take (a key that is not a string or a number, nesting past
    the recursion limit, a cycle) are kept as ``{"unlogged": "<why>"}``, and the call's
    row with them. Encoded when the call ends, on the caller's thread, so a bad value
    loses only its own text, and a caller changing its dict afterwards changes nothing."""
    global _encode
    if _encode is None:
        _encode = _encoder()  # here, not at import: it imports the models
    try:
        return _encode(inputs)
    except Exception as exc:  # noqa: BLE001 - a key, a depth, a cycle, or a repr that raises: the value, not the log
        return _encode({"unlogged": f"{type(exc).__name__}: {exc}"[:SUMMARY_CHARS]})


def _encoder() -> Callable[[Any], str]:
    """``LenientJSONEncoder().encode``, the same text for every value, built once.

    ``encode`` builds CPython's C encoder anew for every value it is given, about half of
    its cost on a tool's few inputs; this one is built once for the process. It is built
    without circular-reference markers (a cycle ends in RecursionError, which
    ``encode_inputs`` catches): markers are state, and threads share this encoder."""
    from registry.models import LenientJSONEncoder

    made = LenientJSONEncoder(check_circular=False)
    make_encoder = getattr(json_encoder, "c_make_encoder", None)  # CPython's C encoder (not in typeshed)
    if make_encoder is None or made.indent is not None:  # encode would not use it either
        return made.encode
    strings = json_encoder.encode_basestring_ascii if made.ensure_ascii else json_encoder.encode_basestring
    chunks = make_encoder(
        None,  # no markers (above)
        made.default,
        strings,
        made.indent,
        made.key_separator,
        made.item_separator,
        made.sort_keys,
        made.skipkeys,
        made.allow_nan,
    )
    return lambda value: "".join(chunks(value, 0))


_encode: Callable[[Any], str] | None = None


def _datetime_adapter() -> Callable[[datetime], Any]:
    """The database's adapter for ``created_at``, looked up once per batch.

    SQLite's (Django's ``adapt_datetimefield_value``) checks the value is aware and
    reads USE_TZ for every row, 3 µs of a row's 12; rows here are always aware
    (``datetime.now(UTC)``) and USE_TZ is on, so what it does comes down to this.
    """
    from django.conf import settings

    if connection.vendor == "sqlite" and settings.USE_TZ:
        zone = connection.timezone
        if zone is UTC:
            return _utc_text()
        return lambda value: str(value.astimezone(zone).replace(tzinfo=None))
    return connection.ops.adapt_datetimefield_value


def _utc_text() -> Callable[[datetime], str]:
    """SQLite's text of a time in UTC, for one batch: ``YYYY-MM-DD HH:MM:SS`` and, unless
    zero, ``.ffffff``. A batch's rows share a few seconds, each formatted once: the
    whole text of every row cost more than its INSERT's share of the statement."""
    seconds: dict[float, str] = {}

    def text(value: datetime) -> str:
        if value.tzinfo is not UTC:
            # The same text without making a naive copy: "+00:00" is the only offset UTC writes.
            return value.astimezone(UTC).isoformat(" ")[:-6]
        # Exact for centuries yet: microseconds / 10**6 rounds to a float well inside the second.
        second = value.timestamp() // 1
        whole = seconds.get(second)
        if whole is None:
            whole = seconds[second] = datetime.fromtimestamp(second, UTC).isoformat(" ")[:-6]
        micro = value.microsecond
        return f"{whole}.{micro:06d}" if micro else whole

    return text


def _new_writer() -> ExecutionLogWriter:
    """The process-wide writer, configured from settings; stopped (flushed) at exit."""
    from django.conf import settings

    made = ExecutionLogWriter(settings.EXECUTION_LOG_FLUSH_SECONDS, settings.EXECUTION_LOG_MAX_BUFFER)
    atexit.register(made.stop)
    return made


writer: Lazy[ExecutionLogWriter] = Lazy(_new_writer)


def summarize(content: str) -> str:
    return content[:SUMMARY_CHARS]

"""Connections to registered datasources, each read-only by the database session itself.

Every connect first checks what the datasource may reach
(``tools.lib.datasource_reach``), so a datasource stored before a rule existed
stops working when it breaks one. PostgreSQL: the connection goes to the
address pinned by that check; the session starts with
``default_transaction_read_only`` and a ``statement_timeout``, and psycopg
opens read-only transactions. SQLite: the file is opened with ``mode=ro`` and
``query_only``, ATTACH is refused (it would open any other file), and a
progress handler enforces the time cap. CSV/Parquet files are read by the host
and handed to a locked DuckDB connection (sqlengine).
Errors that the model can fix become schema/fetch Hints with alternatives taken
from the real schema; nothing here returns a password or a traceback.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

from datacatalog.models import DataSource
from datacatalog.secrets import unseal
from eunice.bounded_read import InputTooLarge, read_csv_file, read_parquet_file
from registry.contract import HintException
from tools.lib.datasource_reach import check_connected, postgres_target, tenant_file

if TYPE_CHECKING:
    import pandas as pd

_MISSING = re.compile(r'(?:relation|column|table|no such table:|no such column:)\s+"?([\w.]+)"?', re.I)


class SourceError(Exception):
    """The source cannot be reached or read; the message is safe to show."""


def run_sql(source: DataSource, sql: str, *, max_rows: int, timeout: float) -> pd.DataFrame:
    """At most ``max_rows + 1`` rows of ``sql`` on ``source``. Raises HintException or SourceError."""
    if source.kind == DataSource.Kind.POSTGRES:
        return _postgres(source, sql, max_rows, timeout)
    if source.kind == DataSource.Kind.SQLITE:
        return _sqlite(source, sql, max_rows, timeout)
    from tools.sqlengine import run_select

    return run_select({source.name: read_file(source)}, sql, max_rows=max_rows, timeout=timeout)


def schema_of(source: DataSource, timeout: float = 10.0) -> dict[str, list[str]]:
    """Table name → column names, from the source itself. Raises SourceError."""
    if source.kind == DataSource.Kind.POSTGRES:
        rows = _postgres_rows(
            source,
            (
                "SELECT table_schema || '.' || table_name, column_name FROM information_schema.columns "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, ordinal_position"
            ),
            timeout,
        )
        tables: dict[str, list[str]] = {}
        for table, column in rows:
            short = table.removeprefix("public.")
            tables.setdefault(short, []).append(column)
        return tables
    if source.kind == DataSource.Kind.SQLITE:
        with _sqlite_connection(source, timeout) as connection:
            names = [r[0] for r in connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")]
            return {n: [c[1] for c in connection.execute(f'PRAGMA table_info("{n}")')] for n in names}
    return {source.name: [str(c) for c in read_file(source).columns]}


def read_file(source: DataSource) -> pd.DataFrame:
    """The CSV or Parquet file of ``source`` as a frame. Raises SourceRefused, SourceError."""
    path = tenant_file(source.tenant_id, str(source.location.get("path", "")))
    try:
        return read_parquet_file(path) if source.kind == DataSource.Kind.PARQUET else read_csv_file(path)
    except InputTooLarge as exc:
        raise SourceError(f"datasource {source.name!r}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise SourceError(f"datasource {source.name!r}: the file cannot be read ({type(exc).__name__})") from None


def ranked_names(missing: str, candidates: list[str], limit: int = 5) -> list[dict]:
    """``candidates`` ranked by similarity to ``missing`` (best first, scored 0..1)."""
    scored = [(difflib.SequenceMatcher(None, missing.lower(), c.lower()).ratio(), c) for c in candidates]
    scored.sort(key=lambda pair: -pair[0])
    return [{"label": name, "score": round(score, 3)} for score, name in scored[:limit]]


def _missing_hint(source: DataSource, message: str, what: str) -> HintException:
    match = _MISSING.search(message)
    missing = match.group(1) if match else ""
    tables = schema_of(source)
    if what == "table":
        candidates = list(tables)
    else:
        candidates = sorted({c for columns in tables.values() for c in columns})
        missing = missing.rsplit(".", 1)[-1]
    return HintException(
        "schema", f"datasource {source.name!r}: no {what} {missing!r}", ranked_names(missing, candidates)
    )


def _postgres_connect(source: DataSource, timeout: float):  # noqa: ANN202 - a psycopg connection
    import psycopg

    target = postgres_target(source.location)
    try:
        # hostaddr: libpq connects to the address checked above and never resolves the name again.
        connection = psycopg.connect(
            host=target.host,
            hostaddr=target.address,
            port=target.port,
            dbname=target.database,
            user=target.user or None,
            password=unseal(source.secret) or None,
            connect_timeout=5,
            options=f"-c default_transaction_read_only=on -c statement_timeout={int(timeout * 1000)}",
            application_name="eunice-datasource",
        )
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1][:200] if str(exc).strip() else "connection failed"
        raise SourceError(f"datasource {source.name!r}: cannot connect ({reason})") from None
    connection.read_only = True
    try:
        check_connected(connection)
    except psycopg.Error as exc:
        connection.close()
        raise SourceError(f"datasource {source.name!r}: cannot check who answered ({type(exc).__name__})") from None
    except BaseException:
        connection.close()
        raise
    return connection


def _postgres_rows(source: DataSource, sql: str, timeout: float, max_rows: int | None = None):  # noqa: ANN202
    with _postgres_connect(source, timeout) as connection, connection.cursor() as cursor:
        cursor.execute(sql)
        if cursor.description is None:
            return [], []
        rows = cursor.fetchmany(max_rows + 1) if max_rows is not None else cursor.fetchall()
        if max_rows is None:
            return rows
        return [d.name for d in cursor.description], rows


def _postgres(source: DataSource, sql: str, max_rows: int, timeout: float) -> pd.DataFrame:
    import pandas as pd
    from psycopg import errors

    try:
        columns, rows = _postgres_rows(source, sql, timeout, max_rows)
    except errors.UndefinedTable as exc:
        raise _missing_hint(source, str(exc), "table") from None
    except errors.UndefinedColumn as exc:
        raise _missing_hint(source, str(exc), "column") from None
    except errors.ReadOnlySqlTransaction:
        raise HintException("schema", f"datasource {source.name!r} is read-only: only queries (SELECT) run") from None
    except errors.QueryCanceled:
        raise HintException(
            "fetch",
            f"the query ran longer than {timeout:g} s and was stopped",
            narrow="filter with WHERE on an indexed column, or aggregate",
        ) from None
    except (errors.SyntaxError, errors.DataError, errors.UndefinedFunction, errors.InsufficientPrivilege) as exc:
        raise HintException("schema", f"sql: {str(exc).splitlines()[0][:300]}") from None
    return pd.DataFrame(rows, columns=columns)


def _sqlite_connection(source: DataSource, timeout: float) -> sqlite3.Connection:
    path = tenant_file(source.tenant_id, str(source.location.get("path", "")))
    connection = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=timeout)
    # ATTACH (and VACUUM INTO, which attaches) would open any file the server can read.
    connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    connection.set_authorizer(_sqlite_authorizer)
    connection.execute("PRAGMA query_only = ON")
    deadline = time.monotonic() + timeout
    # Returning non-zero aborts the statement: the time cap, enforced by SQLite itself.
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return connection


_SQLITE_REFUSED = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH})


def _sqlite_authorizer(action: int, *_: object) -> int:
    return sqlite3.SQLITE_DENY if action in _SQLITE_REFUSED else sqlite3.SQLITE_OK


def _only_this_file(source: DataSource) -> HintException:
    return HintException(
        "schema", f"datasource {source.name!r}: sql may read only this file (ATTACH and VACUUM INTO are not available)"
    )


def _sqlite(source: DataSource, sql: str, max_rows: int, timeout: float) -> pd.DataFrame:
    import pandas as pd

    connection = _sqlite_connection(source, timeout)
    try:
        cursor = connection.execute(sql)
        rows = cursor.fetchmany(max_rows + 1)
        columns = [d[0] for d in cursor.description or ()]
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "no such table" in message:
            raise _missing_hint(source, message, "table") from None
        if "no such column" in message:
            raise _missing_hint(source, message, "column") from None
        if "interrupted" in message:
            raise HintException(
                "fetch",
                f"the query ran longer than {timeout:g} s and was stopped",
                narrow="filter with WHERE, or aggregate",
            ) from None
        if "too many attached" in message:
            raise _only_this_file(source) from None
        if "readonly" in message or "query_only" in message or "read-only" in message:
            raise HintException(
                "schema", f"datasource {source.name!r} is read-only: only queries (SELECT) run"
            ) from None
        raise HintException("schema", f"sql: {message[:300]}") from None
    except sqlite3.DatabaseError as exc:  # the authorizer's refusal
        if "not authorized" in str(exc):
            raise _only_this_file(source) from None
        raise HintException("schema", f"sql: {str(exc)[:300]}") from None
    except sqlite3.Warning as exc:
        raise HintException("schema", f"sql: {str(exc)[:300]}") from None
    finally:
        connection.close()
    return pd.DataFrame(rows, columns=columns)

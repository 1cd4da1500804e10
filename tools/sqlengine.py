"""Read-only SQL over DataFrames with DuckDB: one locked in-memory connection per statement.

Every DuckDB connection in the codebase comes from ``locked_connection`` (a
test fails on any other connect, or on a use of DuckDB's default connection).
It is created with file and network access off, extension autoinstall and
autoload off, a memory and a thread cap, and its configuration locked, all
before it sees any SQL: DuckDB
opens files while merely binding a statement, so even the connection that
only finds the table names a statement reads must be locked. The host
registers the frames a statement may read as views; SQL can name nothing else.
Read-only is enforced by DuckDB itself, not by looking at the text: the parsed
statement must be a single SELECT.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from django.conf import settings

from registry.contract import HintException
from tools.datacommon import ranked

if TYPE_CHECKING:  # DuckDB and pandas load at the first query, not with the catalog
    import duckdb
    import pandas as pd

# What a statement is told when it reaches for anything but a registered dataset.
_ONLY_DATASETS = (
    "sql may read only the datasets it names; files, URLs, globs, extensions, "
    "ATTACH, COPY and settings are not available"
)


def locked_connection() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection that reaches nothing the host does not register into it.

    The limits come from ``settings.DATA`` (``DUCKDB_MEMORY_MB``, ``DUCKDB_THREADS``)
    and cannot be changed by SQL afterwards (``lock_configuration``).
    """
    import duckdb

    return duckdb.connect(
        ":memory:",
        config={
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_community_extensions": False,
            "memory_limit": f"{settings.DATA['DUCKDB_MEMORY_MB']}MB",
            "threads": settings.DATA["DUCKDB_THREADS"],
            "lock_configuration": True,
        },
    )


def referenced_tables(sql: str) -> set[str]:
    """The table names ``sql`` reads; raises a schema Hint unless it is one SELECT that parses
    and touches no file, URL or extension."""
    import duckdb

    try:
        with locked_connection() as parser:
            _one_select(parser, sql)
            return set(parser.get_table_names(sql))
    except (duckdb.PermissionException, duckdb.CatalogException) as exc:
        if _reaches_outside(exc):
            raise HintException("schema", f"{_ONLY_DATASETS} ({_first_line(exc)})") from None
        raise HintException("schema", f"sql does not parse: {_first_line(exc)}") from None
    except duckdb.Error as exc:
        raise HintException("schema", f"sql does not parse: {_first_line(exc)}") from None


def run_select(frames: dict[str, pd.DataFrame], sql: str, *, max_rows: int, timeout: float) -> pd.DataFrame:
    """The result of one SELECT over ``frames``, at most ``max_rows + 1`` rows.

    Raises HintException: schema for a non-SELECT, more than one statement, an
    unknown table or column (with the real names as alternatives), a reach for
    a file, URL, extension or setting; fetch when the statement ran longer than
    ``timeout`` seconds or needed more memory than ``DUCKDB_MEMORY_MB``.
    """
    import duckdb

    connection = locked_connection()
    try:
        for name, frame in frames.items():
            connection.register(name, frame)
        statement = _one_select(connection, sql)
        timer = threading.Timer(timeout, connection.interrupt)
        timer.start()
        try:
            relation = connection.execute(f"SELECT * FROM ({statement}) AS q LIMIT {max_rows + 1}")
            return relation.df()
        except duckdb.InterruptException:
            raise HintException(
                "fetch",
                f"the query ran longer than {timeout:g} s and was stopped",
                narrow="filter (WHERE) or aggregate (GROUP BY) before joining large tables",
            ) from None
        except duckdb.OutOfMemoryException:
            raise HintException(
                "fetch",
                f"the query needs more than the {settings.DATA['DUCKDB_MEMORY_MB']:,} MB a query may use "
                "(EUNICE_DUCKDB_MEMORY_MB) and was stopped",
                narrow="filter (WHERE), aggregate (GROUP BY) or select fewer columns",
            ) from None
        finally:
            timer.cancel()
    except (duckdb.PermissionException, duckdb.CatalogException) as exc:
        if _reaches_outside(exc):
            raise HintException("schema", f"{_ONLY_DATASETS} ({_first_line(exc)})") from None
        raise HintException("schema", _first_line(exc), ranked(sorted(frames))) from None
    except duckdb.BinderException as exc:
        raise HintException("schema", _first_line(exc), ranked(_columns(frames))) from None
    except (
        duckdb.ParserException,
        duckdb.ConversionException,
        duckdb.InvalidInputException,
        duckdb.NotImplementedException,
    ) as exc:
        raise HintException("schema", f"sql: {_first_line(exc)}") from None
    finally:
        connection.close()


def _reaches_outside(exc: duckdb.Error) -> bool:
    """Whether DuckDB refused a file/network access, or a function that lives in an extension."""
    import duckdb

    message = str(exc)
    return isinstance(exc, duckdb.PermissionException) or ("exists in the" in message and " extension" in message)


def _one_select(connection: duckdb.DuckDBPyConnection, sql: str) -> str:
    import duckdb

    statements = connection.extract_statements(sql)
    if len(statements) != 1:
        raise HintException("schema", f"sql must be exactly one SELECT statement; got {len(statements)}")
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        raise HintException(
            "schema",
            f"sql is read-only: only SELECT is allowed, not {statement.type.name}",
            [{"label": "SELECT … FROM <dataset>", "score": 1.0}],
        )
    return statement.query


def _columns(frames: dict[str, pd.DataFrame]) -> list[str]:
    return [f"{name}.{column}" for name, frame in frames.items() for column in frame.columns][:20]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(line.strip() for line in text[:2] if line.strip())[:300]

"""Read-only SQL over DataFrames with DuckDB: one in-memory connection per statement.

Read-only is enforced by DuckDB itself, not by looking at the text: the parsed
statement must be a single SELECT, file and network access are switched off and
the configuration locked before the statement runs, and the frames are
registered as views that SQL cannot write to.
"""

from __future__ import annotations

import threading

import duckdb
import pandas as pd

from registry.contract import HintException
from tools.datacommon import ranked


def referenced_tables(sql: str) -> set[str]:
    """The table names ``sql`` reads; raises a schema Hint unless it is one SELECT that parses."""
    try:
        with duckdb.connect(":memory:") as parser:
            _one_select(parser, sql)
        return set(duckdb.get_table_names(sql))
    except duckdb.Error as exc:
        raise HintException("schema", f"sql does not parse: {_first_line(exc)}") from None


def run_select(frames: dict[str, pd.DataFrame], sql: str, *, max_rows: int, timeout: float) -> pd.DataFrame:
    """The result of one SELECT over ``frames``, at most ``max_rows + 1`` rows.

    Raises HintException: schema for a non-SELECT, more than one statement, an
    unknown table or column (with the real names as alternatives); fetch when
    the statement ran longer than ``timeout`` seconds.
    """
    connection = duckdb.connect(":memory:")
    try:
        for name, frame in frames.items():
            connection.register(name, frame)
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
        statement = _one_select(connection, sql)
        timer = threading.Timer(timeout, connection.interrupt)
        timer.start()
        try:
            relation = connection.execute(f"SELECT * FROM ({statement}) AS q LIMIT {max_rows + 1}")
            return relation.df()
        except duckdb.InterruptException:
            raise HintException("fetch", f"the query ran longer than {timeout:g} s and was stopped",
                                narrow="filter (WHERE) or aggregate (GROUP BY) before joining large tables") from None
        finally:
            timer.cancel()
    except duckdb.CatalogException as exc:
        raise HintException("schema", _first_line(exc), ranked(sorted(frames))) from None
    except duckdb.BinderException as exc:
        raise HintException("schema", _first_line(exc), ranked(_columns(frames))) from None
    except (duckdb.ParserException, duckdb.ConversionException, duckdb.InvalidInputException,
            duckdb.PermissionException, duckdb.NotImplementedException) as exc:
        raise HintException("schema", f"sql: {_first_line(exc)}") from None
    finally:
        connection.close()


def _one_select(connection: duckdb.DuckDBPyConnection, sql: str) -> str:
    statements = connection.extract_statements(sql)
    if len(statements) != 1:
        raise HintException("schema", f"sql must be exactly one SELECT statement; got {len(statements)}")
    statement = statements[0]
    if statement.type != duckdb.StatementType.SELECT:
        raise HintException(
            "schema", f"sql is read-only: only SELECT is allowed, not {statement.type.name}",
            [{"label": "SELECT … FROM <dataset>", "score": 1.0}],
        )
    return statement.query


def _columns(frames: dict[str, pd.DataFrame]) -> list[str]:
    return [f"{name}.{column}" for name, frame in frames.items() for column in frame.columns][:20]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(line.strip() for line in text[:2] if line.strip())[:300]

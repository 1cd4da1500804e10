"""The query tool's DuckDB reads the datasets it is handed and nothing else.

Every DuckDB connection, the one that only finds a statement's table names
included, is locked before it sees SQL: no files, URLs, globs or extensions,
a memory and a thread cap, and a configuration SQL cannot change.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from datacatalog.store import ConversationCatalog
from eunice.tenant_files import catalog_dir
from tests.conftest import OTHER_TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
REFUSED = "sql may read only the datasets it names"


def assert_refused(result) -> None:
    assert result.content.startswith("⚠ schema hint:"), result.content
    assert REFUSED in result.content, result.content


@pytest.mark.parametrize(
    "reader",
    [
        "read_json('{path}')",
        "read_json_auto('{path}')",
        "read_csv('{path}')",
        "read_csv_auto('{path}')",
        "read_text('{path}')",
        "read_blob('{path}')",
        "read_parquet('{path}')",
        "sniff_csv('{path}')",
        "glob('{path}')",
        "parquet_scan('{path}')",
    ],
)
def test_no_table_function_opens_a_server_file(sales, in_conversation, reader):
    result = in_conversation("query", sql=f"SELECT * FROM {reader.format(path='/etc/passwd')}")
    assert_refused(result)
    assert "root:" not in result.content and "Malformed" not in result.content


def test_a_file_named_as_a_table_or_a_url_is_not_read(sales, in_conversation):
    for source in (
        "'/etc/passwd'",
        "'https://example.com/data.parquet'",
        "read_csv('http://127.0.0.1:9/x.csv')",
        "query_table('/etc/passwd')",
        "read_csv(['/etc/hostname', '/etc/passwd'])",
    ):
        result = in_conversation("query", sql=f"SELECT * FROM {source}")
        assert result.content.startswith("⚠ schema hint:"), result.content
        assert "root:" not in result.content


def test_a_glob_of_another_tenants_folder_names_none_of_its_files(sales, in_conversation, other_conversation):
    ConversationCatalog(OTHER_TENANT, other_conversation.id).save(
        "globex_payroll", pd.DataFrame({"salary": [1]}), source="upload"
    )
    folder = catalog_dir(OTHER_TENANT)
    assert any("globex_payroll" in p.name for p in folder.rglob("*")), "the other tenant's file exists"
    for sql in (
        f"SELECT * FROM glob('{folder}/**')",
        f"SELECT * FROM read_json('{folder}/**/*')",
        f"SELECT * FROM read_csv('{folder}/*/*/*')",
    ):
        result = in_conversation("query", sql=sql)
        assert_refused(result)
        assert "globex_payroll" not in result.content


def test_an_extension_function_is_refused_without_a_download(sales, in_conversation):
    started = time.monotonic()
    for sql in (
        "SELECT * FROM sqlite_scan('/tmp/x.db', 't')",
        "SELECT * FROM read_xlsx('/tmp/x.xlsx')",
        "SELECT * FROM st_read('/etc/passwd')",
    ):
        assert_refused(in_conversation("query", sql=sql))
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(
    "statement",
    [
        "INSTALL sqlite",
        "LOAD sqlite",
        "LOAD '/tmp/evil.duckdb_extension'",
        "COPY (SELECT 1) TO '/tmp/eunice-copy.csv'",
        "ATTACH '/tmp/eunice-attached.duckdb' AS other",
        "EXPORT DATABASE '/tmp/eunice-export'",
        "SET enable_external_access = true",
        "SET lock_configuration = false",
        "RESET enable_external_access",
        "SET memory_limit = '100GB'",
        "PRAGMA memory_limit = '100GB'",
        "SET threads = 64",
        "SET autoinstall_known_extensions = true",
        "PRAGMA enable_profiling",
        "SET profile_output = '/tmp/eunice-profile'",
        "CREATE SECRET (TYPE s3, KEY_ID 'x', SECRET 'y')",
        "SELECT * FROM duckdb_secrets()",
    ],
)
def test_a_locked_connection_refuses_whatever_reaches_outside_or_unlocks_it(statement):
    from tools.sqlengine import locked_connection

    with locked_connection() as connection, pytest.raises((duckdb.PermissionException, duckdb.InvalidInputException)):
        connection.execute(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "INSTALL sqlite",
        "LOAD sqlite",
        "COPY (SELECT 1) TO '/tmp/eunice-copy.csv'",
        "ATTACH '/tmp/x.duckdb' AS x",
        "SET enable_external_access = true",
        "PRAGMA memory_limit = '100GB'",
        "SELECT 1; SET threads = 64",
    ],
)
def test_the_query_tool_refuses_statements_that_are_not_one_select(sales, in_conversation, statement):
    result = in_conversation("query", sql=statement)
    assert result.content.startswith("⚠ schema hint:"), result.content
    assert not Path("/tmp/eunice-copy.csv").exists()


def test_the_limits_are_the_settings_and_sql_sees_them_locked(sales, in_conversation, settings):
    settings.DATA = {**settings.DATA, "DUCKDB_MEMORY_MB": 300, "DUCKDB_THREADS": 1}
    sql = (
        "SELECT current_setting('memory_limit') AS memory, current_setting('threads') AS threads, "
        "current_setting('enable_external_access') AS files, current_setting('lock_configuration') AS locked, "
        "current_setting('autoinstall_known_extensions') AS install, "
        "current_setting('autoload_known_extensions') AS autoload, count(*) AS n FROM sales"
    )
    result = in_conversation("query", sql=sql)
    assert result.error is None, result.content
    row = text(result)
    assert re.search(r"28[0-9](\.\d+)? MiB|300", row), row  # DuckDB shows 300 MB as 286.1 MiB
    assert re.search(r"\b1\b", row) and row.lower().count("false") == 3 and "true" in row.lower()


def test_a_memory_hungry_query_is_stopped_by_the_memory_limit(sales, in_conversation, settings):
    settings.DATA = {**settings.DATA, "DUCKDB_MEMORY_MB": 64}
    started = time.monotonic()
    result = in_conversation("query", sql="SELECT length(string_agg(repeat('x', 1000), '')) AS n FROM range(400000)")
    assert result.content.startswith("⚠ fetch hint:"), result.content[:300]
    assert "64 MB" in result.content and "EUNICE_DUCKDB_MEMORY_MB" in result.content
    assert "SET threads" not in result.content  # DuckDB's own advice is a setting the query cannot change
    assert time.monotonic() - started < 30


def test_a_long_query_is_stopped_by_the_timeout(sales, in_conversation, settings):
    settings.DATA = {**settings.DATA, "DATASOURCE_TIMEOUT_SECONDS": 0.5}
    started = time.monotonic()
    result = in_conversation("query", sql="SELECT count(*) FROM range(100000000000) a, sales")
    assert result.content.startswith("⚠ fetch hint:") and "0.5 s" in result.content
    assert time.monotonic() - started < 20


def test_normal_queries_over_conversation_datasets_still_work(sales, in_conversation):
    result = in_conversation(
        "query",
        sql=(
            "WITH north AS (SELECT * FROM sales WHERE region = 'north') "
            "SELECT product, sum(units * price) AS revenue FROM north GROUP BY product ORDER BY revenue DESC"
        ),
    )
    assert result.error is None, result.content
    assert "42.5" in text(result)


# Module-level duckdb calls (duckdb.sql, duckdb.get_table_names …) run on DuckDB's
# default connection, which is not locked: they count as connections too.
_ANY_CONNECTION = re.compile(
    r"duckdb\s*\.\s*(connect|sql|query|execute|get_table_names|default_connection|read_\w+|from_\w+|table|values|"
    r"extract_statements)\b|from\s+duckdb\s+import|import\s+duckdb\s+as\b"
)


def test_only_the_factory_makes_a_duckdb_connection():
    factory = REPO / "tools" / "sqlengine.py"
    offenders = []
    for path in REPO.rglob("*.py"):
        if ".venv" in path.parts or "node_modules" in path.parts or path == Path(__file__).resolve():
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(source.splitlines(), 1):
            if _ANY_CONNECTION.search(line) and not (path == factory and "duckdb.connect(" in line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "DuckDB connections must come from tools.sqlengine.locked_connection:\n" + "\n".join(
        offenders
    )
    assert factory.read_text().count("duckdb.connect(") == 1

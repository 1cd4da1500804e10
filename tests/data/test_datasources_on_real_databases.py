"""Datasources: a scratch PostgreSQL database on this machine and an SQLite file, read-only.

The scratch database is another database on the same loopback server as the
app's (when the app runs on PostgreSQL), never the app's own: loopback hosts
are allowed here only because the tests switch EUNICE_DATASOURCE_ALLOW_PRIVATE
on, and the datasource logs in as a role of its own that is not a superuser
(a superuser's session could read the server's files). Files live in the
tenant's uploads, the only place a file datasource may be.
"""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from django.contrib.auth import get_user_model

from datacatalog.models import DataSource
from eunice.tenant_files import uploads_dir
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.DATA = {**settings.DATA, "DATASOURCE_ALLOW_PRIVATE": True}


@pytest.fixture
def pg_source(in_conversation, scratch_postgres, staff_context):
    result = in_conversation(
        "register_datasource",
        context=staff_context,
        name="crm",
        kind="postgres",
        host="127.0.0.1",
        port=5432,
        database=scratch_postgres,
        user=scratch_postgres,
        password="hunter2-secret",
    )
    assert result.error is None, result.content
    return result


def test_registering_lists_the_tables_and_never_echoes_the_password(pg_source):
    assert "customers (3 columns)" in pg_source.content
    assert "hunter2" not in pg_source.content
    stored = DataSource.objects.get(name="crm")
    assert "hunter2" not in stored.secret and stored.secret
    assert "hunter2" not in repr(stored)


def test_only_staff_may_register_a_datasource(in_conversation, scratch_postgres):
    get_user_model().objects.create_user("pleb")
    result = in_conversation(
        "register_datasource",
        context={"user_id": "pleb"},
        name="crm",
        kind="postgres",
        host="127.0.0.1",
        database=scratch_postgres,
        user="postgres",
    )
    assert result.error and "staff" in result.content
    assert not DataSource.objects.exists()


def test_a_select_returns_rows(pg_source, in_conversation):
    result = in_conversation("query_datasource", name="crm", sql="SELECT full_name FROM customers ORDER BY id")
    assert result.error is None, result.content
    assert "Ada" in text(result) and "3 rows" in result.content


def test_a_write_is_refused_by_the_read_only_session(pg_source, in_conversation, scratch_postgres):
    # A CTE hides the write from any naive text check; the session refuses it.
    sql = "WITH gone AS (DELETE FROM customers RETURNING id) SELECT count(*) FROM gone"
    result = in_conversation("query_datasource", name="crm", sql=sql)
    assert result.content.startswith("⚠ schema hint:") and "read-only" in result.content
    with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{scratch_postgres}") as db:
        assert db.execute("SELECT count(*) FROM customers").fetchone()[0] == 3


def test_an_unknown_column_is_a_hint_with_ranked_real_columns(pg_source, in_conversation):
    result = in_conversation("query_datasource", name="crm", sql="SELECT fullname FROM customers")
    assert result.content.startswith("⚠ schema hint:")
    assert result.content.index("full_name") < result.content.index("country")


def test_an_unknown_table_is_a_hint_naming_the_real_table(pg_source, in_conversation):
    result = in_conversation("query_datasource", name="crm", sql="SELECT * FROM customer")
    assert result.content.startswith("⚠ schema hint:") and "customers" in result.content


def test_too_many_rows_is_a_fetch_hint(pg_source, in_conversation):
    result = in_conversation("query_datasource", name="crm", sql="SELECT * FROM customers", max_rows=2)
    assert result.content.startswith("⚠ fetch hint:") and "narrow:" in result.content


def test_a_slow_query_is_stopped_at_the_time_cap(pg_source, in_conversation, settings):
    settings.DATA = {**settings.DATA, "DATASOURCE_TIMEOUT_SECONDS": 0.5}
    result = in_conversation("query_datasource", name="crm", sql="SELECT pg_sleep(5)")
    assert result.content.startswith("⚠ fetch hint:") and "0.5 s" in result.content


def test_a_wrong_password_set_later_is_an_error_without_the_password(pg_source, in_conversation, staff_context):
    result = in_conversation("set_datasource_auth", context=staff_context, name="crm", password="s3cret-new")
    assert "s3cret-new" not in result.content


def test_another_tenant_cannot_see_or_query_the_datasource(pg_source, in_conversation):
    result = in_conversation("query_datasource", tenant=OTHER_TENANT, name="crm", sql="SELECT 1")
    assert "no datasource 'crm'" in result.content


def test_an_sqlite_file_is_opened_read_only(in_conversation, staff_context):
    path = uploads_dir(TENANT) / "shop.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id int, amount real)")
        db.execute("INSERT INTO orders VALUES (1, 9.5)")
    assert (
        in_conversation("register_datasource", context=staff_context, name="shop", kind="sqlite", path="shop.db").error
        is None
    )
    assert "9.5" in text(in_conversation("query_datasource", name="shop", sql="SELECT amount FROM orders"))
    refused = in_conversation("query_datasource", name="shop", sql="DELETE FROM orders")
    assert refused.content.startswith("⚠ schema hint:") and "read-only" in refused.content
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM orders").fetchone()[0] == 1
    hint = in_conversation("query_datasource", name="shop", sql="SELECT amout FROM orders")
    assert "amount" in hint.content


def test_a_csv_file_datasource_is_queried_with_sql(in_conversation, staff_context):
    path = uploads_dir(TENANT) / "rates.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("currency,rate\nEUR,1.0\nNOK,11.5\n")
    in_conversation("register_datasource", context=staff_context, name="rates", kind="csv", path=str(path))
    result = in_conversation("query_datasource", name="rates", sql="SELECT rate FROM rates WHERE currency='NOK'")
    assert "11.5" in text(result)

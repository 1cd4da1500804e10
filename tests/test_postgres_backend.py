"""The PostgreSQL backend pings the server only for a connection that may have gone stale."""

import pytest
from django.db import close_old_connections, connections

from eunice.db.postgresql import base

connection = connections["default"]

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="runs in the PostgreSQL pass (DATABASE_URL)"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("persistent_connections"),
]


@pytest.fixture
def persistent_connections():
    """Connections kept between cycles, as in production (the suite otherwise closes them)."""
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = 60
    yield
    connection.settings_dict["CONN_MAX_AGE"] = 0
    connection.close()


@pytest.fixture
def pings(monkeypatch):
    """How many health checks reached the server."""
    count = []
    real = base.DatabaseWrapper.is_usable

    def counted(self):
        count.append(1)
        return real(self)

    monkeypatch.setattr(base.DatabaseWrapper, "is_usable", counted)
    return count


def one_cycle():
    """A request cycle as in_db_thread runs one: tidy, query, tidy."""
    close_old_connections()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    close_old_connections()


def test_the_backend_is_used_with_health_checks_on():
    assert isinstance(connection, base.DatabaseWrapper)
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_a_connection_that_just_worked_is_not_pinged_again(pings):
    one_cycle()  # a fresh connection: nothing to check
    one_cycle()
    one_cycle()
    assert pings == []


def test_a_connection_idle_past_the_window_is_pinged_before_use(pings, monkeypatch):
    one_cycle()
    monkeypatch.setattr(connection, "_worked_at", connection._worked_at - base.TRUSTED_FOR - 1)
    one_cycle()
    assert len(pings) == 1


def test_a_connection_the_server_closed_while_idle_is_replaced_before_the_query(monkeypatch):
    one_cycle()
    old_pid = connection.connection.info.backend_pid
    # Another session ends ours, as a server restart or an idle timeout would.
    from psycopg import connect

    settings = connection.settings_dict
    with connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [old_pid])
    monkeypatch.setattr(connection, "_worked_at", connection._worked_at - base.TRUSTED_FOR - 1)

    one_cycle()  # would raise OperationalError if the dead connection were used

    assert connection.connection.info.backend_pid != old_pid

"""A datasource reaches neither the app's own database, nor private hosts, nor files outside its tenant.

The rules hold at registration (nothing refused is stored) and at every
connect: a row stored before the rules existed stops working. Tests that need
a PostgreSQL datasource use a scratch database of their own on this machine's
server (never the app's) and switch EUNICE_DATASOURCE_ALLOW_PRIVATE on to
reach it over loopback; the app-database tests run when the app itself is on
PostgreSQL (DATABASE_URL=postgres://…).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.contrib.auth.models import Permission
from django.db import connection as app_connection

from datacatalog.models import DataSource
from eunice.tenant_files import uploads_dir
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)

on_postgres = pytest.mark.skipif(
    app_connection.vendor != "postgresql",
    reason="the app's own database is PostgreSQL only with DATABASE_URL=postgres://…",
)
SECRET_LINE = "SECRET_KEY=do-not-leak-5f1e"


@pytest.fixture
def allow_private(settings):
    settings.DATA = {**settings.DATA, "DATASOURCE_ALLOW_PRIVATE": True}


@pytest.fixture
def register(in_conversation, staff_context):
    def run(name="crm", **inputs):
        return in_conversation("register_datasource", context=staff_context, name=name, **inputs)

    return run


def refused(result, *words: str) -> bool:
    return "DatasourceRefused" in result.content and all(w in result.content for w in words)


def an_upload(name: str, tenant: str = TENANT) -> str:
    folder = uploads_dir(tenant)
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / name)


@pytest.fixture
def secrets_file(tmp_path):
    """A file on the server, outside every tenant folder, like the app's .env."""
    path = tmp_path / "eunice.env"
    path.write_text(f"name,value\n{SECRET_LINE},1\n")
    return path


# --- hosts ----------------------------------------------------------------------

PRIVATE_HOSTS = (
    "127.0.0.1",
    "localhost",
    "::1",
    "[::1]",
    "0.0.0.0",
    "127.0.0.2",
    "::ffff:127.0.0.1",
    "10.0.0.5",
    "172.16.0.1",
    "192.168.1.10",
    "169.254.169.254",
    "fd00::1",
    "fe80::1",
    "100.64.0.1",
)


def test_a_private_host_is_refused_unless_the_deployment_allows_it(register):
    for host in PRIVATE_HOSTS:
        result = register(kind="postgres", host=host, port=5432, database="postgres", user="postgres")
        assert refused(result, "EUNICE_DATASOURCE_ALLOW_PRIVATE"), (host, result.content)
    assert not DataSource.objects.exists()


def test_an_encoded_address_is_refused_even_where_private_hosts_are_allowed(register, allow_private):
    for host in ("2130706433", "0x7f.1", "0177.0.0.1", "127.1"):
        result = register(kind="postgres", host=host, database="postgres", user="postgres")
        assert refused(result, "decimal, hex or octal"), (host, result.content)
    assert not DataSource.objects.exists()


def test_a_socket_a_host_list_or_a_connection_string_is_refused(register, allow_private):
    for fields in (
        {"host": "/var/run/postgresql"},
        {"host": "/tmp"},
        {"host": "127.0.0.1,127.0.0.2"},
        {"host": "127.0.0.1", "database": "dbname=postgres host=/var/run/postgresql"},
        {"host": "127.0.0.1", "database": "postgresql://postgres@127.0.0.1/postgres"},
        {"host": "127.0.0.1", "user": "postgres host=/var/run/postgresql"},
    ):
        result = register(kind="postgres", **{"database": "postgres", "user": "postgres", **fields})
        assert refused(result), (fields, result.content)
    assert not DataSource.objects.exists()


def test_the_connection_goes_to_the_checked_address_not_to_a_second_lookup(
    in_conversation, allow_private, scratch_postgres, monkeypatch
):
    # A name whose answer changes after the first lookup (DNS rebinding): 127.0.0.3 has no
    # server, so a connection that looked the name up again would fail.
    real, lookups = socket.getaddrinfo, []

    def rebinding(host, *args, **kwargs):
        if host != "crm.eunice.test":
            return real(host, *args, **kwargs)
        lookups.append(host)
        return real("127.0.0.1" if len(lookups) == 1 else "127.0.0.3", *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    stored("postgres", host="crm.eunice.test", port=5432, database=scratch_postgres, user=scratch_postgres)
    result = in_conversation("query_datasource", name="old", sql="SELECT full_name FROM customers ORDER BY id")
    assert result.error is None, result.content
    assert "Ada" in text(result) and len(lookups) == 1


def test_a_role_that_can_read_the_servers_files_is_refused(register, allow_private, scratch_postgres, in_conversation):
    result = register(kind="postgres", host="127.0.0.1", database=scratch_postgres, user="postgres")
    assert refused(result, "server's files"), result.content
    assert not DataSource.objects.exists()
    assert (
        "root:" not in in_conversation("query_datasource", name="crm", sql="SELECT pg_read_file('/etc/passwd')").content
    )


# --- the app's own database ---------------------------------------------------------


def app_database() -> dict:
    return app_connection.settings_dict


def aliases_of_the_app_host() -> list[str]:
    host = app_database()["HOST"] or "localhost"
    return sorted(
        {host, "localhost", "127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1", "0.0.0.0", socket.gethostname()}
    )


@on_postgres
def test_the_apps_own_database_is_refused_by_any_alias_of_its_host(register, allow_private, scratch_postgres):
    for host in aliases_of_the_app_host():
        result = register(
            kind="postgres",
            host=host,
            port=int(app_database()["PORT"] or 5432),
            database=app_database()["NAME"],
            user=scratch_postgres,
        )
        assert refused(result, "app's own database"), (host, result.content)
    assert not DataSource.objects.exists()


@contextmanager
def port_forward(target: tuple[str, int]) -> Iterator[int]:
    """A loopback TCP forwarder to ``target``: the app's server behind a port nobody configured."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(source: socket.socket, sink: socket.socket) -> None:
        with source, sink:
            while chunk := source.recv(65536):
                sink.sendall(chunk)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # shut down: the test is over
                return
            upstream = socket.create_connection(target, timeout=10)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=lambda a=a, b=b: _quietly(pump, a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        thread.join(timeout=15)
        assert not thread.is_alive()


def _quietly(function, *args) -> None:  # noqa: ANN001 - a pump that ends when either side closes
    try:
        function(*args)
    except OSError:
        pass


@contextmanager
def server_identifier_hidden(hidden: bool) -> Iterator[None]:
    """The app's (test) database with pg_control_system() revoked from ordinary roles, as some servers have it."""
    if hidden:
        with app_connection.cursor() as cursor:
            cursor.execute("REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_system() FROM PUBLIC")
    try:
        yield
    finally:
        if hidden:
            with app_connection.cursor() as cursor:
                cursor.execute("GRANT EXECUTE ON FUNCTION pg_catalog.pg_control_system() TO PUBLIC")


@on_postgres
@pytest.mark.parametrize("identifier", ["readable", "revoked"])
def test_the_apps_own_database_is_refused_behind_a_port_forward(register, allow_private, scratch_postgres, identifier):
    app = app_database()
    with (
        server_identifier_hidden(identifier == "revoked"),
        port_forward((app["HOST"] or "127.0.0.1", int(app["PORT"] or 5432))) as port,
    ):
        result = register(kind="postgres", host="127.0.0.1", port=port, database=app["NAME"], user=scratch_postgres)
    assert refused(result, "app's own database"), result.content
    assert not DataSource.objects.exists()


@on_postgres
def test_another_database_on_the_apps_server_is_allowed_where_private_hosts_are(
    register, allow_private, scratch_postgres
):
    result = register(
        kind="postgres",
        host=app_database()["HOST"] or "127.0.0.1",
        port=int(app_database()["PORT"] or 5432),
        database=scratch_postgres,
        user=scratch_postgres,
    )
    assert result.error is None, result.content


# --- rows stored before the rules ---------------------------------------------------


def stored(kind: str, **location) -> DataSource:
    return DataSource.objects.create(tenant_id=TENANT, name="old", kind=kind, location=location)


def test_a_stored_loopback_datasource_stops_working(in_conversation, scratch_postgres):
    stored("postgres", host="127.0.0.1", port=5432, database=scratch_postgres, user=scratch_postgres)
    result = in_conversation("query_datasource", name="old", sql="SELECT full_name FROM customers")
    assert refused(result, "EUNICE_DATASOURCE_ALLOW_PRIVATE"), result.content
    assert "Ada" not in result.content


@on_postgres
def test_a_stored_datasource_on_the_apps_database_stops_working(in_conversation, allow_private, scratch_postgres):
    stored(
        "postgres",
        host="localhost",
        port=int(app_database()["PORT"] or 5432),
        database=app_database()["NAME"],
        user=scratch_postgres,
    )
    result = in_conversation("query_datasource", name="old", sql="SELECT username FROM auth_user")
    assert refused(result, "app's own database"), result.content


@pytest.mark.parametrize("kind", ["csv", "sqlite"])
def test_a_stored_datasource_on_a_server_file_stops_working(in_conversation, secrets_file, kind):
    stored(kind, path=str(secrets_file))
    result = in_conversation("query_datasource", name="old", sql="SELECT * FROM old")
    assert refused(result, "not a file in this tenant's uploads"), result.content
    assert SECRET_LINE not in result.content
    described = in_conversation("describe_entry", name="old")
    assert SECRET_LINE not in described.content and "refused" in described.content


# --- files ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv", "sqlite", "parquet"])
def test_a_file_outside_the_tenants_folders_is_refused(register, secrets_file, kind):
    outside = {
        "a server file": str(secrets_file),
        "/etc/passwd": "/etc/passwd",
        "a relative escape": f"../../../../../../..{secrets_file}",
        "another tenant's upload": an_upload("payroll.csv", OTHER_TENANT),
    }
    (uploads_dir(OTHER_TENANT) / "payroll.csv").write_text("name,salary\nx,1\n")
    for what, path in outside.items():
        result = register(kind=kind, path=path)
        assert refused(result, "not a file in this tenant's uploads"), (what, result.content)
        assert SECRET_LINE not in result.content and "salary" not in result.content
    assert not DataSource.objects.exists()


def test_a_symlink_out_of_the_uploads_is_refused(register, secrets_file):
    link = an_upload("looks-harmless.csv")
    os.symlink(secrets_file, link)
    result = register(kind="csv", path="looks-harmless.csv")
    assert refused(result, "not a file in this tenant's uploads"), result.content
    assert SECRET_LINE not in result.content


def test_a_missing_file_and_a_file_outside_get_the_same_answer(register):
    missing = register(kind="csv", path="/etc/no-such-file").content
    outside = register(kind="csv", path="/etc/passwd").content
    assert missing.replace("no-such-file", "passwd") == outside


def test_the_apps_sqlite_file_is_refused_under_any_name(register, settings, monkeypatch):
    # A deployment whose database file sits in a tenant's folder, reached by its name and a hard link.
    database = an_upload("eunice.sqlite3")
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE authtoken_token (key text)")
    os.link(database, an_upload("copy.db"))
    monkeypatch.setitem(settings.DATABASES, "archive", {"ENGINE": "django.db.backends.sqlite3", "NAME": database})
    for path in ("eunice.sqlite3", "copy.db", "./eunice.sqlite3", database):
        result = register(kind="sqlite", path=path)
        assert refused(result, "app's own database"), (path, result.content)
    assert not DataSource.objects.exists()


def test_a_file_in_the_tenants_uploads_works_by_its_upload_name(register, in_conversation):
    with open(an_upload("rates.csv"), "w") as handle:
        handle.write("currency,rate\nEUR,1.0\nNOK,11.5\n")
    assert register(name="rates", kind="csv", path="rates.csv").error is None
    assert "11.5" in text(in_conversation("query_datasource", name="rates", sql="SELECT rate FROM rates"))


def test_an_sqlite_datasource_cannot_attach_or_write_another_file(register, in_conversation, tmp_path, secrets_file):
    with sqlite3.connect(an_upload("shop.db")) as db:
        db.execute("CREATE TABLE orders (id int)")
    assert register(name="shop", kind="sqlite", path="shop.db").error is None
    attach = in_conversation("query_datasource", name="shop", sql=f"ATTACH DATABASE '{secrets_file}' AS other")
    assert attach.content.startswith("⚠ schema hint:") and "ATTACH" in attach.content, attach.content
    copy = tmp_path / "copied.db"
    in_conversation("query_datasource", name="shop", sql=f"VACUUM INTO '{copy}'")
    assert not copy.exists()


# --- who may register, and for whom ---------------------------------------------------


@pytest.fixture
def plain_staff(django_user_model):
    return django_user_model.objects.create_user("helpdesk", is_staff=True)


def test_staff_without_the_permission_may_not_register(in_conversation, plain_staff):
    result = in_conversation(
        "register_datasource", context={"user_id": str(plain_staff.pk)}, name="rates", kind="csv", path="rates.csv"
    )
    assert "PermissionDenied" in result.content and "datacatalog.add_datasource" in result.content
    assert not DataSource.objects.exists()


def test_the_permission_without_staff_is_not_enough(in_conversation, django_user_model):
    user = django_user_model.objects.create_user("analyst")
    user.user_permissions.add(Permission.objects.get(codename="add_datasource"))
    result = in_conversation(
        "register_datasource", context={"user_id": str(user.pk)}, name="rates", kind="csv", path="rates.csv"
    )
    assert "PermissionDenied" in result.content


def test_the_staff_capability_alone_is_not_enough(in_conversation):
    result = in_conversation(
        "register_datasource",
        context={"capabilities": frozenset({"staff"})},
        name="rates",
        kind="csv",
        path="rates.csv",
    )
    assert "PermissionDenied" in result.content


def test_replacing_a_datasource_or_its_password_needs_the_change_permission(in_conversation, plain_staff):
    plain_staff.user_permissions.add(Permission.objects.get(codename="add_datasource"))
    with open(an_upload("rates.csv"), "w") as handle:
        handle.write("currency,rate\nEUR,1.0\n")
    who = {"user_id": str(plain_staff.pk)}
    assert in_conversation("register_datasource", context=who, name="rates", kind="csv", path="rates.csv").error is None
    again = in_conversation("register_datasource", context=who, name="rates", kind="csv", path="rates.csv")
    assert "PermissionDenied" in again.content and "datacatalog.change_datasource" in again.content
    password = in_conversation("set_datasource_auth", context=who, name="rates", password="x")
    assert "PermissionDenied" in password.content


def test_a_datasource_is_invisible_to_another_tenant(register, in_conversation, staff_context):
    with open(an_upload("rates.csv"), "w") as handle:
        handle.write("currency,rate\nNOK,11.5\n")
    assert register(name="rates", kind="csv", path="rates.csv").error is None
    query = in_conversation("query_datasource", tenant=OTHER_TENANT, name="rates", sql="SELECT * FROM rates")
    assert "no datasource 'rates'" in query.content and "11.5" not in query.content
    assert "11.5" not in in_conversation("describe_entry", tenant=OTHER_TENANT, name="rates").content
    # The other tenant's staff registering the same name makes a datasource of its own.
    theirs = in_conversation(
        "register_datasource",
        tenant=OTHER_TENANT,
        context=staff_context,
        name="rates",
        kind="csv",
        path=an_upload("rates.csv"),
    )
    assert refused(theirs, "not a file in this tenant's uploads")
    assert list(DataSource.objects.values_list("tenant_id", flat=True)) == [TENANT]

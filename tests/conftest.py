"""Shared cast and helpers: two tenants, a staff member, and `call(name, **inputs)`."""

from __future__ import annotations

import re
import sys

import pytest

from registry import registry as registry_module
from registry.context import ToolContext
from registry.models import ToolDefinition, ToolStatus, ToolType

TENANT = "acme"
OTHER_TENANT = "globex"


def _empty_postgresql_tables_with_delete() -> None:
    """Between transactional tests, empty PostgreSQL's tables with DELETE, not TRUNCATE.

    Django's flush truncates every table after each transactional test; on PostgreSQL
    a TRUNCATE of all ~75 tables gives each a new file and took ~0.6 s (0.07 s as DELETEs
    of the few rows a test leaves), and the suite has hundreds of such tests. Every
    foreign key Django makes is deferrable, so the order of the DELETEs does not
    matter within the flush's one transaction. A flush that resets sequences keeps
    Django's own statement.
    """
    try:
        from django.db.backends.postgresql.operations import DatabaseOperations
    except ImportError:  # psycopg not installed: the suite runs on SQLite only
        return
    truncating = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):  # noqa: ANN001, ANN202
        if reset_sequences or allow_cascade or not tables:
            return truncating(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return ["SET CONSTRAINTS ALL DEFERRED"] + [f"DELETE FROM {self.quote_name(table)}" for table in tables]

    DatabaseOperations.sql_flush = sql_flush


_empty_postgresql_tables_with_delete()


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test gets its own registry and empty caches: nothing leaks between tests."""
    from registry.surface import clear_capability_cache
    from registry.surface_floor import clear_floor_cache
    from tools import holdings

    fresh = registry_module.ToolRegistry()
    monkeypatch.setattr(registry_module.get_registry, "_value", fresh)
    clear_floor_cache()
    clear_capability_cache()
    holdings.forget()  # a flushed table sends no signal
    yield fresh
    # Model servers keep connections open, as the real API does: close the
    # shared providers' before the test's server goes away.
    from llm.roles import close_providers

    close_providers()
    # A test that began a turn and never finished it (a dispatcher test drives one turn's
    # calls) leaves it in this process's running turns: the next test's heartbeat would
    # find it still running and never stop beating.
    from conversations import turn_reservations

    with turn_reservations._running_lock:
        turn_reservations._running_here.clear()


@pytest.fixture(autouse=True)
def _system_tools_seeded(request):
    """Tests that use the database start with the catalog seeded, as production does."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return
    transactional = marker.kwargs.get("transaction", False)
    request.getfixturevalue("_no_session_outlives_the_run")  # set up after the database, so torn down before
    request.getfixturevalue("transactional_db" if transactional else "db")
    from registry.seeding import seed_catalog

    if not ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM).exists():
        seed_catalog()


@pytest.fixture
def registry(fresh_registry):
    return fresh_registry


@pytest.fixture
def make_tool(registry):
    """Create a tool row and (optionally) register its handler."""

    def make(name, handler=None, *, inline=True, timeout=None, **fields):
        defaults = {
            "description": f"Test tool {name}.",
            "input_schema": {"type": "object", "properties": {}},
            "tool_type": ToolType.SYSTEM,
            "status": ToolStatus.APPROVED,
            "category": "test",
        }
        row = ToolDefinition.objects.create(name=name, **{**defaults, **fields})
        if handler is not None:
            registry.register_handler(name, handler, inline=inline, timeout=timeout)
        return row

    return make


def text(result) -> str:
    """What another tool would read of a result: the render minus its `✓ ok.` line."""
    from registry.contract import content_for_data

    return content_for_data(result.content)


@pytest.fixture
def call(registry):
    """call(name, tenant=..., **inputs) -> ToolResult through the one dispatch path."""

    def run(name, tenant=TENANT, context=None, **inputs):
        ctx = ToolContext(**{"tenant_id": tenant, "user_id": "u1", **(context or {})})
        return registry.execute_tool(name, inputs, ctx)

    return run


@pytest.fixture
def approval_rules_kept_fresh(monkeypatch):
    """The approval rules read once and then kept for the test. A call is prepared on its
    event loop only while the rules are fresh: every ``REFRESH_SECONDS`` (2 s) one call
    goes to a database thread to read them again, by design. A test that counts database
    trips over several calls would otherwise count that read on a loaded machine."""
    from registry import approval_rules

    monkeypatch.setattr(approval_rules, "REFRESH_SECONDS", 3600.0)
    approval_rules.forget()  # the next call off the loop reads them, to be kept an hour


@pytest.fixture
def otel(monkeypatch):
    """Telemetry on, into the SDK's in-memory exporters (tests/telemetry.py), content
    capture off. The process's global providers are left alone."""
    from eunice import telemetry
    from tests.telemetry import installed

    recorded, tracer_provider, meter_provider = installed()
    yield recorded
    telemetry.uninstall()
    tracer_provider.shutdown()
    meter_provider.shutdown()


def external_assets(html: str) -> list[str]:
    """The src/href URLs of a page that another host would serve (an empty list when all are local).

    Asserting on URLs, not on the absence of a word like "cdn": pages embed
    random CSRF tokens and hashes, which now and then spell it.
    """
    urls = re.findall(r'(?:src|href)="([^"]*)"', html)
    return [url for url in urls if url.startswith("//") or re.match(r"[a-z][a-z0-9+.-]*:", url, re.I)]


@pytest.fixture(scope="session")
def _no_session_outlives_the_run(django_db_setup):
    """At the end of the run, after every test's own teardown and before the test
    database is dropped, close the database connections of worker threads that have
    ended with their event loops, and end the sessions other processes still hold.

    Such a connection is only released by its finaliser, and when that warns
    (ResourceWarning) pytest keeps the warning, and with it the connection, to
    the end of the run; PostgreSQL then refuses to drop a database that still
    has sessions. (Done as a session fixture's teardown, not in the last test's
    teardown hook: there it ran before that test's own flush, and closed the
    connection the flush needed when the last test drove a browser.)
    """
    yield
    try:
        import psycopg
    except ImportError:
        return
    import gc

    from django.db import connections

    in_use = {wrapper.connection for wrapper in connections.all(initialized_only=True)}
    gc.collect()
    # type(), not isinstance(): isinstance asks a weakref proxy for its
    # referent's class, and a proxy whose referent is gone raises ReferenceError.
    for leftover in [o for o in gc.get_objects() if issubclass(type(o), psycopg.Connection)]:
        if leftover not in in_use and not leftover.closed:
            leftover.close()
    _end_other_sessions_of_the_test_database(in_use)


def _end_other_sessions_of_the_test_database(in_use: set) -> None:
    """End the sessions other processes still hold on the PostgreSQL test database.

    A server or worker process a test started, or one of its connections, can
    outlive the test by the moment its backend takes to notice; DROP DATABASE
    then waits 5 s and fails the whole run at teardown ("is being accessed by
    other users"). Each session ended is named on stderr, so a leak stays visible.
    """
    import psycopg
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    keep = {used.info.backend_pid for used in in_use if isinstance(used, psycopg.Connection) and not used.closed}
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as own:
        others = own.execute(
            "SELECT pid, application_name, state, left(query, 60) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        for pid, application, state, query in others:
            if pid in keep:  # this process's own, which Django closes itself
                continue
            print(
                f"\nending a leftover session of the test database: pid {pid} {application!r} {state} {query!r}",
                file=sys.stderr,
            )
            own.execute("SELECT pg_terminate_backend(%s)", [pid])


# Suites that run in one CI pass only, the PostgreSQL + Redis one (.ci/run leaves them
# out of the SQLite pass with -m "not once"; pytest.ini): browsers, server and other
# subprocesses, sandbox batteries, real MCP server processes. They are the slow part of
# the suite and test nothing the database backend changes, or test it on the stricter one.
# A path ending in "/" names a directory, a path a whole module, path::name one test.
ONCE = (
    "tests/faults/",
    "tests/web/test_browser.py",
    "tests/web/test_approval_card.py",
    "tests/web/test_call_approvals.py",
    "tests/web/test_call_approval_restart.py",
    "tests/web/test_chat_markdown.py",
    "tests/web/test_chat_layout.py",
    "tests/web/test_chat_history.py",
    "tests/web/test_spatial_cards.py",
    "tests/web/test_chat_accessibility.py",
    "tests/web/test_mcp_in_the_chat_page.py",
    "tests/web/test_staff_pages_browser.py",
    "tests/web/test_a_skill_from_chat.py",
    "tests/web/test_insight_cards.py",
    "tests/web/test_model_cards.py",
    "tests/data/test_trained_models.py::test_a_boosted_binary_classifier_explains_rows_in_the_models_own_log_odds",
    "tests/test_collector.py",
    "tests/test_search_preload.py",
    "tests/sandbox/test_the_zygote_starts_with_the_server.py",
    "tests/sandbox/test_cpu_memory_and_output_bombs_are_stopped.py",
    "tests/sandbox/test_resource_bombs_are_stopped_through_the_real_path.py",
    "tests/llm/test_scripted_server.py::test_the_fake_model_server_command_serves_a_script_file",
    "tests/mcp/test_stdio_lifecycle.py",
    "tests/mcp/test_time_server.py",
    "tests/mcp/test_resilience.py",
    "tests/mcp/test_admin_connections.py",
    "tests/mcp/test_oauth.py",
    "tests/web/test_mcp_oauth_browser.py",
    "tests/mcp/test_task_required_tools_are_not_offered.py",
    "tests/mcp/test_conformance_suite.py::test_the_client_scenarios_pass_on_both_revisions_authorization_included",
    "tests/mcpserver/test_conformance_suite.py",
    "tests/test_execution_log.py::test_buffered_rows_are_written_when_the_process_exits",
    "tests/test_settings_from_environment.py::test_check_deploy_passes_with_the_documented_production_environment",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        module, _, name = item.nodeid.partition("::")
        in_directory = any(entry.endswith("/") and module.startswith(entry) for entry in ONCE)
        if in_directory or module in ONCE or f"{module}::{name.split('[')[0]}" in ONCE:
            item.add_marker(pytest.mark.once)

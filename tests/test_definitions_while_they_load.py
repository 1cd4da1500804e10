"""The registry's copy of the definitions, while it is being read and when a read fails.

A server's preload reads the catalog while its first requests arrive; a call made
then was told its tool does not exist (the copy was still empty), and a read that
failed left the copy looking current until the catalog next changed.
"""

import threading

import pytest
from django.db import OperationalError

from registry import snapshot
from registry.snapshot import Snapshot
from tests.conftest import text

pytestmark = pytest.mark.django_db(transaction=True)  # read from two threads


@pytest.fixture
def slow_first_read(monkeypatch):
    """The first definition read takes 0.3 s; ``reading`` is set once it has begun."""
    reading = threading.Event()
    real = snapshot._definition

    def slow(row):
        if not reading.is_set():
            reading.set()
            threading.Event().wait(0.3)
        return real(row)

    monkeypatch.setattr(snapshot, "_definition", slow)
    return reading


def test_a_call_while_the_definitions_are_first_read_waits_for_them(slow_first_read):
    definitions = Snapshot()
    first = threading.Thread(target=definitions.current)
    first.start()
    assert slow_first_read.wait(10)
    seen = definitions.current()  # the other thread is still reading
    first.join(10)
    assert "search_tools" in seen
    assert definitions.generation == 1  # read once, not once per caller


def test_a_change_saved_during_a_read_is_read_next(slow_first_read):
    definitions = Snapshot()
    first = threading.Thread(target=definitions.current)
    first.start()
    assert slow_first_read.wait(10)
    definitions.invalidate()  # what saving a definition does
    first.join(10)
    assert not definitions.fresh()
    definitions.current()
    assert definitions.generation == 2


def test_a_read_that_fails_leaves_the_definitions_due_another(monkeypatch):
    definitions = Snapshot()
    real = snapshot._definition
    failures = iter([OperationalError("the database went away")])

    def flaky(row):
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(row)

    monkeypatch.setattr(snapshot, "_definition", flaky)
    with pytest.raises(OperationalError):
        definitions.current()
    assert not definitions.fresh()
    assert "search_tools" in definitions.current()


def test_a_tool_approved_by_another_process_is_callable_at_once(call, make_tool, settings):
    from django.utils import timezone

    from registry.models import ToolDefinition, ToolStatus
    from tests import handlers

    settings.EUNICE_REGISTRY_POLL_SECONDS = 600  # the next look would be ten minutes away
    make_tool("send_report", handlers.echo, status=ToolStatus.TESTING)
    call("search_tools", query="send a report")  # the search index is built (its vectors stored)
    assert "unknown tool 'send_report'" in call("send_report").content  # read while it waited for review
    # Approved in another process: no signal reaches this one.
    ToolDefinition.objects.filter(name="send_report").update(status=ToolStatus.APPROVED, updated_at=timezone.now())
    assert text(call("send_report")).startswith("echo")


def test_an_unknown_tool_looks_at_the_catalog_without_reading_it_again(call, registry, settings):
    settings.EUNICE_REGISTRY_POLL_SECONDS = 600
    call("search_tools", query="anything")
    generation = registry.snapshot_generation
    assert "unknown tool 'no_such_tool'" in call("no_such_tool").content
    assert registry.snapshot_generation == generation

"""The process bus: what one server process publishes, every other one hears at once.

The other process here is a real one: a small Python child that publishes through
eunice.bus, as a server process does. Needs REDIS_URL (skipped without it).
"""

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conversations.cancels import CANCEL_CALL, CANCEL_TURN
from conversations.state import CallCancel, CancelToken
from eunice import bus
from registry.signals import DEFINITIONS_CHANGED

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("REDIS_URL", "")
BOUND = 10.0  # seconds: generous for a loaded machine; a delivery takes milliseconds

pytestmark = pytest.mark.skipif(not REDIS_URL, reason="the process bus needs REDIS_URL")


@pytest.fixture(autouse=True)
def handlers_restored():
    """A test's own handlers are forgotten after it."""
    saved = {topic: list(handlers) for topic, handlers in bus._handlers.items()}
    yield
    bus._handlers.clear()
    bus._handlers.update(saved)


@pytest.fixture
def listening(settings):
    """This process subscribed to the bus of REDIS_URL's database: its one listener (the
    ASGI app starts it in a server process; it stays for the rest of the run)."""
    settings.REDIS_URL = REDIS_URL
    listener = bus.start()
    assert listener is not None and listener.subscribed.wait(BOUND), "the listener did not subscribe"
    return listener


def publish_from_another_process(topic: str, url: str = REDIS_URL, **payload) -> None:
    code = f"""
        import django
        from django.conf import settings
        settings.configure(REDIS_URL={url!r})
        from eunice import bus
        bus.publish({topic!r}, here=False, **{payload!r})
    """
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, check=True, timeout=60)


def heard(topic: str) -> tuple[threading.Event, list[dict]]:
    event, payloads = threading.Event(), []

    @bus.on(topic)
    def record(payload: dict) -> None:
        payloads.append(payload)
        event.set()

    return event, payloads


def test_news_published_in_another_process_reaches_this_ones_handlers(listening):
    arrived, payloads = heard("test.news")

    publish_from_another_process("test.news", tool="weather")

    assert arrived.wait(BOUND) and payloads == [{"tool": "weather"}]


def test_a_process_runs_its_own_news_once_not_again_when_redis_echoes_it(listening):
    _, payloads = heard("test.own")
    _, other = heard("test.after")

    bus.publish("test.own", n=1)
    publish_from_another_process("test.after")  # published after ours: once it is here, ours was too

    assert wait_until(lambda: other) and payloads == [{"n": 1}]


def test_deployments_on_two_redis_databases_do_not_hear_each_other(listening):
    _, payloads = heard("test.elsewhere")
    _, marker = heard("test.marker")
    other_database = REDIS_URL.rsplit("/", 1)[0] + "/15"

    publish_from_another_process("test.elsewhere", url=other_database)
    publish_from_another_process("test.marker")

    assert bus.channel_name(other_database) != bus.channel_name(REDIS_URL)
    assert wait_until(lambda: marker) and payloads == []


def test_without_redis_news_stays_in_this_process(settings):
    settings.REDIS_URL = ""
    _, payloads = heard("test.alone")

    bus.publish("test.alone", n=2)
    bus.publish("test.alone", here=False, n=3)

    assert payloads == [{"n": 2}] and bus.start() is None


@pytest.mark.django_db
def test_a_definition_changed_in_another_process_reloads_this_ones_registry_at_once(listening):
    from registry.registry import get_registry

    registry = get_registry()
    registry.definitions()
    assert registry._snapshot.fresh()

    publish_from_another_process(DEFINITIONS_CHANGED)

    # Well inside the 2 s fingerprint poll, which would not even look before then.
    assert wait_until(lambda: not registry._snapshot.fresh())


def test_a_cancel_sent_to_another_process_stops_the_turn_running_here(listening):
    token = CancelToken("conversation-a")
    try:
        publish_from_another_process(CANCEL_TURN, conversation="conversation-a")

        assert wait_until(lambda: token.cancelled)
    finally:
        token.release()


def test_a_tool_calls_cancel_sent_elsewhere_stops_only_that_call_here(listening):
    turn = CancelToken("conversation-b")
    call, other = CallCancel(turn, "conversation-b", "toolu_1"), CallCancel(turn, "conversation-b", "toolu_2")
    try:
        publish_from_another_process(CANCEL_CALL, conversation="conversation-b", tool_use_id="toolu_1")

        assert wait_until(lambda: call.cancelled)
        assert not other.cancelled and not turn.cancelled
    finally:
        call.release(), other.release(), turn.release()


def wait_until(predicate, timeout: float = BOUND) -> bool:
    done = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return True
        done.wait(0.02)
    return bool(predicate())


def test_an_approval_rule_changed_in_another_process_is_read_again_here_at_once(listening):
    from registry import approval_rules

    approval_rules._rules.due = time.monotonic() + 3600  # fresh for an hour: only a push makes it stale

    publish_from_another_process(approval_rules.RULES_CHANGED)

    assert wait_until(lambda: approval_rules._rules.due == float("-inf"))


def test_a_policy_rule_changed_in_another_process_is_read_again_here_at_once(listening):
    from conversations.tenant_policy import RULES_CHANGED
    from registry import gate

    rules = gate.tenant_policy.installed()
    rules._due = time.monotonic() + 3600

    publish_from_another_process(RULES_CHANGED)

    assert wait_until(lambda: rules._due == float("-inf"))


@pytest.mark.django_db(transaction=True)
def test_rows_saved_in_one_transaction_publish_one_change_once_it_commits(listening, make_tool, monkeypatch):
    from django.db import transaction

    sent: list[str] = []
    publish = bus.publish
    monkeypatch.setattr(bus, "publish", lambda topic, **payload: sent.append(topic) or publish(topic, **payload))
    with transaction.atomic():
        make_tool("first_tool")
        make_tool("second_tool")
        assert sent == []  # nothing told before the commit: another process would read the old rows

    assert sent == [DEFINITIONS_CHANGED]


def test_a_forked_child_names_itself_anew_so_it_hears_its_parent():
    parent = bus.origin()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its name and leave at once
        os.write(write, bus.origin().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read), os.close(write)

    assert child != parent and child.startswith(f"{pid}:")


def test_an_answer_given_on_another_processs_socket_resolves_the_question_asked_here(listening):
    from conversations import questions

    async def ask_and_wait() -> str:
        question_id, answered = questions.ask("conversation-q")
        await asyncio.to_thread(
            publish_from_another_process,
            questions.ANSWER,
            conversation="conversation-q",
            question=question_id,
            text="Tuesday",
        )
        return await asyncio.wait_for(answered, BOUND)

    assert asyncio.run(ask_and_wait()) == "Tuesday"


def test_a_skill_changed_in_another_process_is_read_again_here_for_its_tenant_only(listening):
    from tools import holdings

    kept = (time.monotonic() + 3600, holdings.Holdings())
    holdings._held.update({"acme": kept, "globex": kept})

    publish_from_another_process(holdings.CHANGED, tenant="acme")

    assert wait_until(lambda: "acme" not in holdings._held)
    assert "globex" in holdings._held

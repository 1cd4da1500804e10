"""A conversation always accepts its next message: turns are reserved when they begin,
closed as interrupted when they cannot finish, and never two at once.

Through the real anthropic SDK against the scripted Messages API server, over REST
and the websocket.
"""

import subprocess
import threading
import time
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from django.db import close_old_connections, connection
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.loop import run_turn
from conversations.models import (
    ChatMessage,
    Conversation,
    ConversationEvent,
    TurnRecord,
)
from conversations.replay import replay
from conversations.turn_reservations import HOST, TurnInProgress, close_dead_turns
from conversations.turns import begin_turn
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

pytestmark = pytest.mark.django_db(transaction=True)

HELD = {"text": ["Thinking ", "it ", "over…"], "pause_after": 4}  # streams a word, then waits for resume()


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def post(api, conversation, text):
    return api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": text}, format="json")


def kinds(conversation, turn):
    return list(
        ConversationEvent.objects.filter(conversation=conversation, turn=turn)
        .order_by("sequence")
        .values_list("event_type", flat=True)
    )


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def dead_pid() -> int:
    """The pid of a process of this host that has exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


class DisplayThatBreaks:
    """A display that fails on the second chunk of text, as a broken relay would."""

    def __init__(self):
        self.texts = []

    def send(self, chunk):
        if chunk["type"] == "text_delta":
            if self.texts:
                raise RuntimeError("the relay broke")
            self.texts.append(chunk["text"])


def test_a_turn_that_raises_is_closed_as_interrupted_and_the_next_message_is_answered(model, conversation, user, api):
    model([{"text": ["Half ", "an answer"]}, {"text": ["Here is all of it."]}])

    with pytest.raises(RuntimeError, match="the relay broke"):
        async_to_sync(run_turn)(conversation, text="first", user=user, display=DisplayThatBreaks())

    first = TurnRecord.objects.get(conversation=conversation, turn=1)
    assert first.status == "interrupted" and "RuntimeError" in first.interrupted_reason
    assert "the relay broke" not in first.interrupted_reason  # the message may quote anything; the log has it
    assert kinds(conversation, 1) == ["user_message", "interrupted"]
    # What the user saw stays: the text streamed before the failure, as the model's words and nothing more.
    assert ChatMessage.objects.get(conversation=conversation, role="assistant").text == "Half "

    response = post(api, conversation, "second")

    assert response.status_code == 201, response.content
    assert response.json()["message"]["text"] == "Here is all of it."
    assert TurnRecord.objects.get(conversation=conversation, turn=2).status == "finished"
    report = replay(conversation)
    assert report.identical, report.first_difference
    assert (report.turns, report.interrupted) == (2, 1)


def killed_turn(conversation, question: str, events: list[tuple[str, dict]], *, elsewhere: bool = False) -> None:
    """What a server SIGKILLed mid-turn leaves: turn 1 running, its question, its events so
    far. ``elsewhere``: the server ran on another host, so only its heartbeat, stopped long
    ago, tells that it is gone."""
    TurnRecord.objects.create(
        conversation=conversation,
        turn=1,
        status="running",
        owner="another-host:4242:gone" if elsewhere else f"{HOST}:{dead_pid()}:gone",
        heartbeat_at=timezone.now() - timedelta(hours=1) if elsewhere else timezone.now(),
    )
    ChatMessage.objects.create(
        conversation=conversation, message_id="u1", tenant_id=conversation.tenant_id, role="user", text=question
    )
    for sequence, (kind, data) in enumerate([("user_message", {"text": question, "turn": 1}), *events], start=1):
        ConversationEvent.objects.create(
            conversation=conversation, turn=1, sequence=sequence, event_type=kind, data=data
        )


def test_a_turn_whose_server_was_killed_is_closed_by_the_next_message_keeping_what_it_recorded(
    model, conversation, user, api
):
    # Killed during its second model call.
    killed_turn(
        conversation,
        "plan my trip",
        [
            ("text_delta", {"text": "Let me look at trains."}),
            ("llm_request", {"model": "claude-test", "stop_reason": "tool_use"}),
        ],
    )
    model([{"text": ["Trains leave hourly."]}])

    response = post(api, conversation, "are you there?")

    assert response.status_code == 201, response.content
    first = TurnRecord.objects.get(conversation=conversation, turn=1)
    assert first.status == "interrupted" and "server stopped" in first.interrupted_reason
    assert kinds(conversation, 1) == ["user_message", "text_delta", "llm_request", "interrupted"]
    assert kinds(conversation, 2)[0] == "user_message" and kinds(conversation, 2)[-1] == "done"
    answers = list(
        ChatMessage.objects.filter(conversation=conversation, role="assistant").values_list("text", flat=True)
    )
    assert answers == ["Let me look at trains.", "Trains leave hourly."]
    assert replay(conversation).identical


def test_a_page_drawn_after_its_turns_server_died_elsewhere_shows_it_interrupted_not_running(conversation, user):
    from django.test import Client

    killed_turn(conversation, "plan my trip", [("text_delta", {"text": "Let me look at trains."})], elsewhere=True)
    client = Client()
    client.force_login(user)

    drawn = client.get(f"/c/{conversation.pk}/timeline/").json()

    assert drawn["running"] is False
    assert drawn["chunks"][-1]["stop_reason"] == "interrupted"
    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "interrupted"
    assert '"type": "running"' not in client.get(f"/c/{conversation.pk}/").content.decode()


def test_a_turn_beating_on_another_host_is_drawn_running(conversation, user):
    from django.test import Client

    killed_turn(conversation, "plan my trip", [], elsewhere=True)
    TurnRecord.objects.filter(conversation=conversation).update(heartbeat_at=timezone.now())
    client = Client()
    client.force_login(user)
    assert client.get(f"/c/{conversation.pk}/timeline/").json()["running"] is True
    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "running"


def test_cancelling_a_turn_whose_server_died_closes_it_and_tells_the_page(conversation, user):
    killed_turn(conversation, "plan my trip", [("text_delta", {"text": "Let me look at trains."})], elsewhere=True)

    async def cancel():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "cancel"})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return chunks

    chunks = async_to_sync(cancel)()
    assert [c["type"] for c in chunks] == ["cancel_requested", "done"]
    assert chunks[-1]["stop_reason"] == "interrupted" and "interrupted" in chunks[-1]["notice"]
    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "interrupted"
    assert list(ChatMessage.objects.filter(role="assistant").values_list("text", flat=True)) == [
        "Let me look at trains."
    ]


def test_the_minute_sweep_closes_a_turn_whose_server_died_elsewhere_and_its_open_page_hears_it(conversation, user):
    from conversations.cancels import sweep_dead_turns

    killed_turn(conversation, "plan my trip", [("text_delta", {"text": "Let me look at trains."})], elsewhere=True)
    beating = Conversation.objects.create(tenant_id=conversation.tenant_id, user=user, title="beating")
    TurnRecord.objects.create(  # run on another host, whose heartbeat is fresh
        conversation=beating, turn=1, status="running", owner="another-host:77:live", heartbeat_at=timezone.now()
    )

    async def sweep_while_both_pages_are_open():
        dead_page = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        live_page = socket(beating.pk, await sync_to_async(cookie_for)(user))
        await dead_page.connect()
        await live_page.connect()
        swept = await sync_to_async(sweep_dead_turns, thread_sensitive=False)()  # as a django-q2 worker runs it
        chunks = await receive_until_done(dead_page)
        live_heard_nothing = await live_page.receive_nothing(timeout=0.5)
        await dead_page.disconnect()
        await live_page.disconnect()
        return swept, chunks, live_heard_nothing

    swept, chunks, live_heard_nothing = async_to_sync(sweep_while_both_pages_are_open)()
    assert swept == 1
    assert [(c["type"], c.get("stop_reason")) for c in chunks] == [("done", "interrupted")]
    assert live_heard_nothing
    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "interrupted"
    assert TurnRecord.objects.get(conversation=beating, turn=1).status == "running"
    assert list(ChatMessage.objects.filter(role="assistant").values_list("text", flat=True)) == [
        "Let me look at trains."
    ]


def test_the_sweep_runs_every_minute_from_its_schedule_and_leaves_no_result_row(conversation, monkeypatch):
    from django_q.conf import Conf
    from django_q.models import Schedule, Success
    from django_q.scheduler import scheduler

    call_command("seed_tools", verbosity=0)
    sweep = Schedule.objects.get(name="close dead turns")
    assert (sweep.schedule_type, sweep.minutes) == (Schedule.MINUTES, 1)
    Schedule.objects.exclude(pk=sweep.pk).delete()
    Schedule.objects.filter(pk=sweep.pk).update(next_run=timezone.now() - timedelta(seconds=1))
    killed_turn(conversation, "plan my trip", [], elsewhere=True)
    monkeypatch.setattr(Conf, "SYNC", True)  # the task the scheduler makes runs here, as a worker runs it

    scheduler()

    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "interrupted"
    assert not Success.objects.filter(func=sweep.func).exists()  # a row a minute would crowd out the others
    assert Schedule.objects.get(pk=sweep.pk).next_run > timezone.now()


def test_a_rest_cancel_closes_a_turn_whose_server_died_and_the_open_page_hears_it(conversation, user, api):
    killed_turn(conversation, "plan my trip", [], elsewhere=True)

    async def cancel_while_a_page_is_open():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        response = await sync_to_async(api.post)(f"/api/conversations/{conversation.pk}/cancel/", {}, format="json")
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return response.status_code, chunks

    status, chunks = async_to_sync(cancel_while_a_page_is_open)()
    assert status == 202 and [c.get("stop_reason") for c in chunks] == ["interrupted"]
    assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "interrupted"


def test_start_up_closes_the_turns_of_dead_processes_and_leaves_running_ones(conversation, user):
    other = Conversation.objects.create(tenant_id=conversation.tenant_id, user=user)
    third = Conversation.objects.create(tenant_id=conversation.tenant_id, user=user)
    stale = timezone.now() - timedelta(hours=1)
    alive = subprocess.Popen(["sleep", "60"])
    try:
        TurnRecord.objects.create(
            conversation=conversation,
            turn=1,
            status="running",
            owner=f"{HOST}:{dead_pid()}:gone",
            heartbeat_at=timezone.now(),
        )
        TurnRecord.objects.create(
            conversation=other, turn=1, status="running", owner="another-host:123:abc", heartbeat_at=stale
        )
        TurnRecord.objects.create(
            conversation=third, turn=1, status="running", owner=f"{HOST}:{alive.pid}:live", heartbeat_at=timezone.now()
        )

        assert sorted(close_dead_turns()) == sorted([conversation.pk, other.pk])
    finally:
        alive.kill()
        alive.wait()
    statuses = dict(TurnRecord.objects.values_list("conversation_id", "status"))
    assert statuses == {conversation.pk: "interrupted", other.pk: "interrupted", third.pk: "running"}
    assert replay(conversation).identical and replay(third).running == 1


def test_a_second_message_while_a_turn_streams_is_refused_with_409_naming_it_and_nothing_is_lost(
    model, conversation, api
):
    server = model([HELD, {"text": ["Second answer."]}])
    first = {}
    runner = threading.Thread(target=lambda: first.update(response=post(api, conversation, "first")))
    runner.start()
    try:
        wait_for(
            lambda: (
                TurnRecord.objects.filter(conversation=conversation, status="running").exists()
                and len(server.requests) == 1
            )
        )

        refused = post(api, conversation, "second, too soon")
    finally:
        server.resume()
        runner.join(30)

    assert refused.status_code == 409
    assert refused["Content-Type"] == "application/json"
    assert refused.json() == {"detail": refused.json()["detail"], "code": "turn_in_progress", "running_turn": 1}
    assert "turn 1" in refused.json()["detail"] and "cancel" in refused.json()["detail"]
    assert first["response"].status_code == 201
    assert first["response"].json()["message"]["text"] == "Thinking it over…"  # the billed answer is kept
    # The refused message was never stored; the conversation goes on with the next one.
    assert list(ChatMessage.objects.filter(conversation=conversation).values_list("text", flat=True)) == [
        "first",
        "Thinking it over…",
    ]
    assert post(api, conversation, "second").json()["message"]["text"] == "Second answer."
    assert replay(conversation).identical


def test_a_turn_running_in_another_server_process_refuses_the_message(model, conversation, api):
    elsewhere = subprocess.Popen(["sleep", "60"])  # a live process of this host owns the turn
    try:
        TurnRecord.objects.create(
            conversation=conversation,
            turn=1,
            status="running",
            owner=f"{HOST}:{elsewhere.pid}:other",
            heartbeat_at=timezone.now(),
        )
        response = post(api, conversation, "hello")
    finally:
        elsewhere.kill()
        elsewhere.wait()
    assert response.status_code == 409 and response.json()["running_turn"] == 1
    assert not ChatMessage.objects.filter(conversation=conversation).exists()


def test_messages_sent_at_once_on_separate_connections_start_exactly_one_turn(conversation):
    # Each thread has its own database connection, as each server process does:
    # only the database's lock and constraints can keep the turns apart.
    count = 6
    barrier = threading.Barrier(count)
    outcomes = []

    def send(n):
        try:
            barrier.wait(10)
            begin_turn(Conversation.objects.get(pk=conversation.pk), user_message=f"message {n}")
            outcomes.append("started")
        except TurnInProgress as busy:
            outcomes.append(f"refused, turn {busy.turn} runs")
        except Exception as exc:  # noqa: BLE001 (the test reports whatever else happened)
            outcomes.append(repr(exc))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(outcomes) == ["refused, turn 1 runs"] * (count - 1) + ["started"]
    assert list(TurnRecord.objects.filter(conversation=conversation).values_list("turn", "status")) == [(1, "running")]
    assert ChatMessage.objects.filter(conversation=conversation).count() == 1


def test_a_second_message_over_the_websocket_gets_an_error_event_and_the_socket_stays_open(model, conversation, user):
    server = model([HELD, {"text": ["Now the second."]}])

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "first"})
        assert (await ws.receive_json_from(timeout=10))["type"] == "text_delta"
        await ws.send_json_to({"type": "message", "text": "second, too soon"})
        refused = []
        while not refused:
            chunk = await ws.receive_json_from(timeout=10)
            if chunk["type"] == "error":
                refused.append(chunk)
        server.resume()
        first = await receive_until_done(ws)
        await ws.send_json_to({"type": "message", "text": "second"})
        second = await receive_until_done(ws)
        await ws.disconnect()
        return refused[0], first, second

    refused, first, second = async_to_sync(chat)()
    assert refused["code"] == "turn_in_progress" and refused["running_turn"] == 1
    assert "still running" in refused["message"]
    assert first[-1]["type"] == "done" and not first[-1]["cancelled"]
    assert "".join(c["text"] for c in second if c["type"] == "text_delta") == "Now the second."
    assert list(TurnRecord.objects.filter(conversation=conversation).values_list("turn", "status")) == [
        (1, "finished"),
        (2, "finished"),
    ]
    assert replay(conversation).identical


def test_replay_says_which_turns_were_interrupted(model, conversation, user, capsys):
    model([{"text": ["Half ", "an answer"]}])
    with pytest.raises(RuntimeError):
        async_to_sync(run_turn)(conversation, text="first", user=user, display=DisplayThatBreaks())

    call_command("replay_conversation", conversation.pk)

    assert "replayed 1 turn(s) (1 interrupted): 2 events and 1 message(s), identical" in capsys.readouterr().out


def test_the_migration_closes_turns_that_broke_before_reservations_and_replay_covers_them(conversation):
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("conversations", "0005_file_owner")])
    apps = executor.loader.project_state([("conversations", "0005_file_owner")]).apps
    Event = apps.get_model("conversations", "ConversationEvent")
    for sequence, kind in enumerate(["user_message", "llm_request"], start=1):  # a turn that raised: no record
        Event.objects.create(conversation_id=conversation.pk, turn=1, sequence=sequence, event_type=kind, data={})
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    record = TurnRecord.objects.get(conversation=conversation, turn=1)
    assert record.status == "interrupted"
    assert kinds(conversation, 1) == ["user_message", "llm_request", "interrupted"]
    assert replay(conversation).identical

"""A server process renews the heartbeat of all its running turns in one statement.

Other processes judge a turn alive by its heartbeat (conversations/turn_reservations.py).
Each turn used to beat on its own: a database thread hop and an UPDATE per turn every
EUNICE_TURN_HEARTBEAT_SECONDS, 40 a second at 400 turns. One task per event loop
now renews them all at once, and ends when no turn runs.
"""

import asyncio
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from conversations import turn_reservations
from conversations.models import Conversation, TurnRecord
from conversations.turn_reservations import beat, keep_beating, released, reserve_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

LONG_AGO = timedelta(minutes=5)
BOUND = 30.0  # seconds: a beat comes every 0.1 s here; generous for a machine shared by many loads


@pytest.fixture
def running(django_user_model):
    """Three turns this process runs (three users': each may run two), their heartbeats five
    minutes old; released after the test."""
    reserved = []
    for n in range(3):
        owner = django_user_model.objects.create_user(f"beating{n}")
        conversation = Conversation.objects.create(tenant_id=TENANT, user=owner)
        with transaction.atomic():
            reserved.append((conversation.pk, reserve_turn(conversation)))
    TurnRecord.objects.filter(owner=turn_reservations.OWNER).update(heartbeat_at=timezone.now() - LONG_AGO)
    yield reserved
    for conversation_id, turn in reserved:
        released(conversation_id, turn)


def fresh(conversation_id: str) -> bool:
    record = TurnRecord.objects.get(conversation_id=conversation_id, status=TurnRecord.Status.RUNNING)
    return record.heartbeat_at > timezone.now() - LONG_AGO / 2


def test_one_statement_renews_every_turn_this_process_runs_and_no_other(running, user):
    elsewhere = Conversation.objects.create(tenant_id=TENANT, user=user)
    TurnRecord.objects.create(
        conversation=elsewhere,
        turn=1,
        status=TurnRecord.Status.RUNNING,
        owner="another-host:4242:0123456789ab",
        heartbeat_at=timezone.now() - LONG_AGO,
    )

    with CaptureQueriesContext(connection) as queries:
        renewed = beat()

    assert (renewed, len(queries)) == (3, 1)
    assert all(fresh(conversation_id) for conversation_id, _ in running)
    assert not fresh(elsewhere.pk)  # another process's turn is its own to beat


def test_a_loop_beats_its_turns_with_one_task_that_ends_when_no_turn_runs(running, settings):
    settings.EUNICE_TURN_HEARTBEAT_SECONDS = 0.1

    async def scenario() -> tuple[bool, bool]:
        keep_beating()
        keep_beating()  # a second turn starting: the same task
        tasks = [task for loop, task in turn_reservations._beating.items() if loop is asyncio.get_running_loop()]
        assert len(tasks) == 1
        renewed = await _within(BOUND, lambda: all(fresh(conversation_id) for conversation_id, _ in running))
        for conversation_id, turn in running:
            released(conversation_id, turn)
        await asyncio.wait_for(asyncio.shield(tasks[0]), BOUND)
        return renewed, tasks[0].done()

    renewed, ended = asyncio.run(scenario())

    assert renewed, "the running turns' heartbeats were not renewed"
    assert ended


async def _within(seconds: float, check) -> bool:  # noqa: ANN001
    from asgiref.sync import sync_to_async

    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if await sync_to_async(check)():
            return True
        await asyncio.sleep(0.05)
    return False

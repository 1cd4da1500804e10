"""The per-user answer cap holds across server processes, not only within one.

Another process's running turn is a turn record it owns (another host's, with a fresh
heartbeat): what a second server process leaves in the shared database while it runs
an answer. Each process used to count only its own answers, so N processes allowed N
times the cap.
"""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import ChatMessage, Conversation, TurnRecord
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def running_elsewhere(user, *, heartbeat_age: float = 0.0) -> Conversation:
    """A conversation of ``user`` whose turn another server process is running."""
    other = Conversation.objects.create(tenant_id=TENANT, user=user)
    TurnRecord.objects.create(
        conversation=other,
        turn=1,
        status=TurnRecord.Status.RUNNING,
        owner="another-host:4242:0123456789ab",
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age),
    )
    return other


def test_an_answer_running_in_another_process_counts_against_the_cap(api, model, conversation, user, settings):
    settings.EUNICE_MAX_RUNS_PER_USER = 1
    model([{"text": ["Hello."]}])
    running_elsewhere(user)

    refused = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "hi"}, format="json")

    assert refused.status_code == 429
    assert refused.json() == {"detail": "you already have 1 answers running; wait or cancel one"}
    assert not ChatMessage.objects.filter(conversation=conversation).exists()  # nothing was stored
    assert not TurnRecord.objects.filter(conversation=conversation).exists()


def test_below_the_cap_an_answer_elsewhere_leaves_room(api, model, conversation, user, settings):
    settings.EUNICE_MAX_RUNS_PER_USER = 2
    model([{"text": ["Hello."]}])
    running_elsewhere(user)

    answered = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "hi"}, format="json")

    assert (answered.status_code, answered.json()["message"]["text"]) == (201, "Hello.")


def test_a_dead_processs_turn_does_not_count(api, model, conversation, user, settings):
    settings.EUNICE_MAX_RUNS_PER_USER = 1
    settings.EUNICE_TURN_STALE_SECONDS = 60
    model([{"text": ["Hello."]}])
    running_elsewhere(user, heartbeat_age=600)  # its process stopped beating ten minutes ago

    answered = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "hi"}, format="json")

    assert answered.status_code == 201


def test_another_users_answers_do_not_count(api, model, conversation, settings):
    from django.contrib.auth import get_user_model

    settings.EUNICE_MAX_RUNS_PER_USER = 1
    model([{"text": ["Hello."]}])
    running_elsewhere(get_user_model().objects.create_user("zoe", password="pw"))

    assert api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "hi"}, format="json").status_code == 201


def test_a_socket_is_refused_in_words_when_answers_elsewhere_fill_the_cap(model, conversation, user, settings):
    from asgiref.sync import async_to_sync, sync_to_async

    from tests.conversations.test_websocket import cookie_for, socket

    settings.EUNICE_MAX_RUNS_PER_USER = 1
    model([{"text": ["Hello."]}])
    running_elsewhere(user)

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "hi"})
        refused = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return refused

    assert async_to_sync(chat)() == {
        "type": "error",
        "refused": True,  # nothing was stored: the page gives the text back
        "message": "you already have 1 answers running; wait or cancel one",
    }

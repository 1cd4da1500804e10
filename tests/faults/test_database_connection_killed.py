"""The server's PostgreSQL connections terminated in the middle of a turn or of an open
websocket conversation (pg_terminate_backend, as a failover or an operator does): the work
recovers on new connections, nothing is lost, and the next message is answered."""

import json
import threading

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token

from conversations.models import ChatMessage, Conversation, TurnRecord
from llm.models import ModelConfig
from llm.scripted.server import ScriptedMessagesServer
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.faults.operator import Server, cookie_for, environment, receive_json, receive_until, wait_for

pytestmark = [
    pytest.mark.faults,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's"),
]

KEY = "sk-ant-scripted-test"


def terminate_other_backends() -> int:
    """End every other session on the test database (the server's); returns how many."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


@pytest.fixture(scope="module")
def model():
    """The scripted model the module's server calls; each test scripts its turns (``script``)."""
    server = ScriptedMessagesServer([{"text": ["unscripted"]}], api_key=KEY).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(model, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        process = Server(
            environment(
                ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=model.url, EUNICE_LLM_MAX_RETRIES="0", EUNICE_JOBS="0"
            ),
            name="server-database",
        )
    yield process
    process.stop()


@pytest.fixture
def chat():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user, title="Failover")
    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    return conversation, user


def test_the_database_connections_terminated_mid_turn_are_replaced_and_the_turn_and_the_next_one_answer(
    server, model, chat
):
    conversation, user = chat
    token = Token.objects.create(user=user).key
    model.script([{"text": ["Through ", "the ", "failover."], "pause_after": 4}, {"text": ["Next."]}])
    url = f"{server.url}/api/conversations/{conversation.pk}/messages/"
    headers = {"Authorization": f"Token {token}"}
    first: list[requests.Response] = []
    sender = threading.Thread(
        target=lambda: first.append(requests.post(url, json={"text": "first"}, headers=headers, timeout=120))
    )
    sender.start()
    assert wait_for(lambda: len(model.requests) == 1, 60), server.log()[-3000:]
    assert terminate_other_backends() >= 1
    model.resume()
    sender.join(120)
    following = requests.post(url, json={"text": "second"}, headers=headers, timeout=120)

    (answer,) = first
    assert answer.status_code == 201, answer.text
    assert answer.json()["message"]["text"] == "Through the failover."
    assert following.status_code == 201, following.text
    assert following.json()["message"]["text"] == "Next."
    assert list(ChatMessage.objects.filter(conversation=conversation, role="user").values_list("text", flat=True)) == [
        "first",
        "second",
    ]
    statuses = list(TurnRecord.objects.filter(conversation=conversation).values_list("status", flat=True))
    assert statuses == ["finished", "finished"]
    assert "running it on a new one" in server.log()
    assert model.failures == []


def test_the_database_connections_terminated_under_an_open_websocket_the_next_message_is_answered(server, model, chat):
    conversation, user = chat
    model.script([{"text": ["Before."]}, {"text": ["After ", "the ", "failover."]}])
    with server.socket(conversation.pk, cookie_for(user)) as ws:
        ws.send(json.dumps({"type": "message", "text": "before"}))
        receive_until(ws, "done")
        ws.send(json.dumps({"type": "bogus"}))  # the socket's own read of the conversation, just now
        assert "unknown message type" in receive_json(ws)["message"]
        assert terminate_other_backends() >= 1

        ws.send(json.dumps({"type": "message", "text": "after"}))
        frames = receive_until(ws, "done")

    assert not [f for f in frames if f["type"] == "error"], frames
    assert "".join(f["text"] for f in frames if f["type"] == "text_delta") == "After the failover."
    texts = ChatMessage.objects.filter(conversation=conversation).values_list("role", "text")
    assert list(texts) == [
        ("user", "before"),
        ("assistant", "Before."),
        ("user", "after"),
        ("assistant", "After the failover."),
    ]
    assert "Traceback" not in server.log()
    assert model.failures == []

"""The server's PostgreSQL connections terminated in the middle of a turn
(pg_terminate_backend, as a failover or an operator does): the turn recovers on new
connections, nothing is lost, and the next message is answered."""

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
from tests.faults.operator import Server, environment, wait_for

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


def test_the_database_connections_terminated_mid_turn_are_replaced_and_the_turn_and_the_next_one_answer():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    token = Token.objects.create(user=user).key
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user, title="Failover")
    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    model = ScriptedMessagesServer(
        [{"text": ["Through ", "the ", "failover."], "pause_after": 4}, {"text": ["Next."]}], api_key=KEY
    ).start()
    server = Server(
        environment(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=model.url, EUNICE_LLM_MAX_RETRIES="0", EUNICE_JOBS="0"),
        name="server-database",
    )
    url = f"{server.url}/api/conversations/{conversation.pk}/messages/"
    headers = {"Authorization": f"Token {token}"}
    first: list[requests.Response] = []
    try:
        sender = threading.Thread(
            target=lambda: first.append(requests.post(url, json={"text": "first"}, headers=headers, timeout=120))
        )
        sender.start()
        assert wait_for(lambda: len(model.requests) == 1, 60), server.log()[-3000:]
        assert terminate_other_backends() >= 1
        model.resume()
        sender.join(120)
        following = requests.post(url, json={"text": "second"}, headers=headers, timeout=120)
    finally:
        server.stop()
        model.stop()
    log = server.log()

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
    assert "running it on a new one" in log

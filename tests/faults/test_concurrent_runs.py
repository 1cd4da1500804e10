"""Fifty messages at once from one user, on fifty conversations, against the real server:
the per-user cap on running answers holds, every refused message is told so (and nothing
of it is stored), the running answers finish, and the user's next message is answered."""

import threading

import pytest
import requests
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from conversations.models import ChatMessage, Conversation, TurnRecord
from llm.models import ModelConfig
from llm.scripted.server import ScriptedMessagesServer
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.faults.operator import Server, environment, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

KEY = "sk-ant-scripted-test"
AT_ONCE = 50
CAP = 2  # EUNICE_MAX_RUNS_PER_USER's default


def test_fifty_concurrent_runs_for_one_user_are_held_to_the_cap_and_nothing_is_lost():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    token = Token.objects.create(user=user).key
    conversations = [Conversation.objects.create(tenant_id=TENANT, user=user, title=f"c{n}") for n in range(AT_ONCE)]
    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    held = {"text": ["Held ", "answer."], "pause_after": 4}  # streams a word, then waits for resume()
    model = ScriptedMessagesServer([held, held, {"text": ["Next."]}], api_key=KEY).start()
    server = Server(
        environment(
            ANTHROPIC_API_KEY=KEY,
            ANTHROPIC_BASE_URL=model.url,
            EUNICE_LLM_MAX_RETRIES="0",
            EUNICE_JOBS="0",
            EUNICE_TURN_RATE="10000/min",  # the run cap is under test, not the rate limit
        ),
        name="server-concurrent",
    )
    answers: dict[str, requests.Response] = {}

    def post(conversation: Conversation) -> None:
        answers[conversation.pk] = requests.post(
            f"{server.url}/api/conversations/{conversation.pk}/messages/",
            json={"text": f"hello {conversation.pk}"},
            headers={"Authorization": f"Token {token}"},
            timeout=120,
        )

    try:
        senders = [threading.Thread(target=post, args=(c,)) for c in conversations]
        for sender in senders:
            sender.start()
        refused = wait_for(lambda: len(answers) >= AT_ONCE - CAP and answers, 120)
        assert refused, f"only {len(answers)} answers came back:\n{server.log()[-3000:]}"
        assert len(model.requests) == CAP  # only the capped runs reached the model
        model.resume()
        for sender in senders:
            sender.join(120)
        following = requests.post(
            f"{server.url}/api/conversations/{conversations[0].pk}/messages/",
            json={"text": "and now?"},
            headers={"Authorization": f"Token {token}"},
            timeout=120,
        )
    finally:
        server.stop()
        model.stop()

    statuses = sorted(answer.status_code for answer in answers.values())
    assert statuses == [201] * CAP + [429] * (AT_ONCE - CAP), statuses
    for answer in answers.values():
        if answer.status_code == 429:
            assert f"you already have {CAP} answers running" in answer.json()["detail"]
    ran = {pk for pk, answer in answers.items() if answer.status_code == 201}
    assert set(TurnRecord.objects.values_list("conversation_id", flat=True)) == ran | {conversations[0].pk}
    assert ChatMessage.objects.filter(role="assistant", text="Held answer.").count() == CAP
    assert following.status_code == 201 and following.json()["message"]["text"] == "Next.", following.text
    assert ChatMessage.objects.filter(role="user").count() == CAP + 1  # a refused message is not stored
    assert model.failures == []

"""Policy warnings grow firmer with each violation in a conversation, across its turns,
and every violation is counted, however many are counted at once."""

import threading

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import (
    ConversationEvent,
    Observation,
    PolicyRule,
    PolicyViolationTally,
    WorkingSetEntry,
)
from conversations.policies import Violation, count_violation
from tests import handlers

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def analyse(n):
    return {"tool_uses": [{"name": "analyze", "input": {"n": n}, "id": f"toolu_{n}"}]}


def test_the_second_violation_in_a_conversation_is_its_second_even_in_a_later_turn(
    model, make_tool, conversation, user
):
    make_tool("analyze", handlers.echo, input_schema=SCHEMA)
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="analyze")
    PolicyRule.objects.create(
        name="preview first", tool_name="analyze", kind="requires_prior_tool", parameter="preview"
    )
    model(
        [
            analyse(1),
            {"text": ["Done."], "expect": {"tool_result_contains": "⚠ policy 'preview first': run preview"}},
            analyse(2),
            {"text": ["Done again."], "expect": {"tool_result_contains": "again (2nd time)"}},
        ]
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")

    for text in ("analyse this", "and this"):
        response = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": text}, format="json")
        assert response.status_code == 201, response.content

    occurrences = [
        (e.turn, e.data["occurrence"])
        for e in ConversationEvent.objects.filter(conversation=conversation, event_type="policy_violation")
    ]
    assert occurrences == [(1, 1), (2, 2)]


def test_violations_counted_at_once_are_each_counted_once_with_their_own_occurrence(conversation, user):
    rule = PolicyRule.objects.create(
        name="preview first", tool_name="analyze", kind="requires_prior_tool", parameter="preview"
    )
    violation = Violation(rule.id, rule.name, rule.kind, False, "run preview first")
    count = 8
    barrier = threading.Barrier(count)
    occurrences = []

    def violate():  # each on its own connection, as parallel calls and other processes are
        try:
            barrier.wait(10)
            occurrences.append(
                count_violation(
                    violation, conversation_id=conversation.pk, tenant_id=conversation.tenant_id, user_id=str(user.pk)
                )
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=violate) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(occurrences) == list(range(1, count + 1))
    assert PolicyViolationTally.objects.get(conversation=conversation, rule=rule).count == count
    assert Observation.objects.get(user_id=str(user.pk), kind="policy_violation", key=rule.name).count == count

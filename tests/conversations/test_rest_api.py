"""REST for conversations: token and session auth, a turn per POST, tenant isolation."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_a_conversation_is_created_in_the_users_tenant(api, user):
    response = api.post("/api/conversations/", {"title": "Trip"}, format="json")
    assert response.status_code == 201
    created = Conversation.objects.get(pk=response.json()["id"])
    assert (created.tenant_id, created.user, created.title) == (TENANT, user, "Trip")


def test_posting_a_message_runs_a_turn_and_returns_the_answer(api, model, weather_tool, conversation):
    model([{"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "t1"}]}, {"text": ["Rainy."]}])
    response = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "Weather?"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert (body["message"]["text"], body["stop_reason"], body["model_calls"]) == ("Rainy.", "end_turn", 2)
    messages = api.get(f"/api/conversations/{conversation.pk}/messages/").json()
    assert [m["role"] for m in messages] == ["user", "assistant"]
    events = api.get(f"/api/conversations/{conversation.pk}/events/").json()
    assert events[0]["event_type"] == "user_message" and events[-1]["event_type"] == "done"


def test_an_empty_message_is_refused_naming_the_field(api, conversation):
    response = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": ""}, format="json")
    assert response.status_code == 400 and "text" in response.json()


def test_another_users_conversation_is_not_found(api, conversation):
    stranger = get_user_model().objects.create_user("eve", password="pw")
    TenantMembership.objects.create(user=stranger, tenant_id=OTHER_TENANT)
    theirs = Conversation.objects.create(tenant_id=OTHER_TENANT, user=stranger)
    assert api.get(f"/api/conversations/{theirs.pk}/messages/").status_code == 404
    assert theirs.pk not in [c["id"] for c in api.get("/api/conversations/").json()]


def test_a_colleague_in_the_same_tenant_cannot_read_my_conversation(conversation):
    colleague = get_user_model().objects.create_user("bob", password="pw")
    TenantMembership.objects.create(user=colleague, tenant_id=TENANT)
    client = APIClient()
    client.force_authenticate(colleague)
    assert client.get(f"/api/conversations/{conversation.pk}/events/").status_code == 404


def test_a_user_without_a_tenant_is_told_why(conversation):
    loner = get_user_model().objects.create_user("lone", password="pw")
    client = APIClient()
    client.force_authenticate(loner)
    response = client.post("/api/conversations/", {"title": "x"}, format="json")
    assert response.status_code == 403
    assert "no tenant" in response.json()["detail"]


def test_anonymous_requests_are_refused(conversation):
    assert APIClient().get("/api/conversations/").status_code in (401, 403)

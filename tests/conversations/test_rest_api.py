"""REST for conversations: token and session auth, a turn per POST, tenant isolation."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import ChatMessage, Conversation
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
    messages = api.get(f"/api/conversations/{conversation.pk}/messages/").json()["results"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    events = api.get(f"/api/conversations/{conversation.pk}/events/").json()["results"]
    assert events[0]["event_type"] == "user_message" and events[-1]["event_type"] == "done"


def test_an_empty_message_is_refused_naming_the_field(api, conversation):
    response = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": ""}, format="json")
    assert response.status_code == 400 and "text" in response.json()


def test_another_users_conversation_is_not_found(api, conversation):
    stranger = get_user_model().objects.create_user("eve", password="pw")
    TenantMembership.objects.create(user=stranger, tenant_id=OTHER_TENANT)
    theirs = Conversation.objects.create(tenant_id=OTHER_TENANT, user=stranger)
    assert api.get(f"/api/conversations/{theirs.pk}/messages/").status_code == 404
    assert theirs.pk not in [c["id"] for c in api.get("/api/conversations/").json()["results"]]


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


def test_the_answer_cap_counts_websocket_and_rest_answers_together(api, model, conversation, user, settings):
    from asgiref.sync import async_to_sync, sync_to_async

    from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

    settings.EUNICE_MAX_RUNS_PER_USER = 1
    model([{"text": [f"w{n} " for n in range(40)], "delay": 0.05}, {"text": ["Later."]}])
    second = Conversation.objects.create(tenant_id=TENANT, user=user)
    post = f"/api/conversations/{second.pk}/messages/"

    async def while_the_socket_answers():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "long"})
        await ws.receive_json_from(timeout=10)  # the first answer is streaming
        refused = await sync_to_async(api.post, thread_sensitive=False)(post, {"text": "too"}, format="json")
        await receive_until_done(ws)
        await ws.disconnect()
        return refused

    refused = async_to_sync(while_the_socket_answers)()

    assert refused.status_code == 429
    assert refused.json() == {"detail": "you already have 1 answers running; wait or cancel one"}
    after = api.post(post, {"text": "now"}, format="json")
    assert (after.status_code, after.json()["message"]["text"]) == (201, "Later.")


@pytest.mark.parametrize("mode", ["sideways", "delegate"])
def test_a_conversation_starts_only_in_a_users_mode_and_a_bad_one_names_the_choices(api, mode):
    response = api.post("/api/conversations/", {"title": "x", "mode": mode}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"mode": [f'"{mode}" is not a mode to start a conversation in; use one of: chat, agentic']},
    )
    assert not Conversation.objects.exists()


def test_a_misspelt_field_is_refused_not_dropped(api, conversation):
    created = api.post("/api/conversations/", {"titel": "Trip"}, format="json")
    posted = api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "hi", "mdoe": "x"}, format="json")
    assert (created.status_code, created.json()) == (400, {"titel": ["unknown field; the fields are: title, mode"]})
    assert (posted.status_code, posted.json()) == (400, {"mdoe": ["unknown field; the fields are: text"]})


def test_lists_come_a_page_at_a_time(api, user):
    for n in range(3):
        Conversation.objects.create(tenant_id=TENANT, user=user, title=f"c{n}")

    first = api.get("/api/conversations/?limit=2").json()
    rest = api.get(first["next"]).json()

    assert (first["count"], len(first["results"]), first["previous"]) == (3, 2, None)
    assert (len(rest["results"]), rest["next"]) == (1, None)
    assert {c["title"] for c in first["results"] + rest["results"]} == {"c0", "c1", "c2"}


@pytest.mark.parametrize(
    "query, error",
    [
        ("limit=abc", {"limit": "must be a whole number from 1 to 1000; got 'abc'"}),
        ("limit=0", {"limit": "must be a whole number from 1 to 1000; got 0"}),
        ("limit=5000", {"limit": "must be a whole number from 1 to 1000; got 5000"}),
        ("offset=-1", {"offset": "must be a whole number, 0 or more; got -1"}),
    ],
)
def test_a_bad_page_is_refused_naming_the_parameter_and_its_rule(api, query, error):
    response = api.get(f"/api/conversations/?{query}")
    assert (response.status_code, response.json()) == (400, error)


def test_the_latest_message_can_be_read_alone(api, conversation):
    for n, role in enumerate(["user", "assistant", "user", "assistant"]):
        ChatMessage.objects.create(
            conversation=conversation, message_id=f"m{n}", tenant_id=TENANT, role=role, text=f"m{n}"
        )

    newest = api.get(f"/api/conversations/{conversation.pk}/messages/?order=newest&limit=1").json()
    oldest = api.get(f"/api/conversations/{conversation.pk}/messages/?limit=2").json()

    assert (newest["count"], [m["text"] for m in newest["results"]]) == (4, ["m3"])
    assert [m["text"] for m in oldest["results"]] == ["m0", "m1"]


def test_an_unknown_message_order_names_the_choices(api, conversation):
    response = api.get(f"/api/conversations/{conversation.pk}/messages/?order=sideways")
    assert (response.status_code, response.json()) == (400, {"order": "must be one of oldest, newest; got 'sideways'"})

"""Rate limits and login lockout: the REST API, its expensive writes, the websocket's turns, logins."""

import base64

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rates(settings):
    """Set some throttle rates for one test, on empty counters."""

    def set_rates(**scopes: str) -> None:
        current = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**current, **scopes}}
        cache.clear()

    yield set_rates
    cache.clear()


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_reads_past_the_users_rate_get_a_429_with_retry_after(api, rates):
    rates(user="3/min")
    codes = [api.get("/api/conversations/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = api.get("/api/conversations/")
    assert refused["Content-Type"] == "application/json"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "throttled" in refused.json()["detail"]


def test_posting_messages_counts_against_the_turn_rate_and_reading_them_does_not(api, conversation, rates):
    rates(turn="2/min")
    url = f"/api/conversations/{conversation.pk}/messages/"
    assert [api.post(url, {"text": " "}, format="json").status_code for _ in range(2)] == [400, 400]
    assert api.post(url, {"text": "hello"}, format="json").status_code == 429
    assert api.get(url).status_code == 200  # reads count only against the user's own rate


def test_uploads_count_against_the_upload_rate(api, conversation, rates):
    rates(upload="1/min")
    assert api.post("/api/documents/", {}, format="multipart").status_code == 400  # no file: still counted
    assert api.post("/api/documents/", {}, format="multipart").status_code == 429


def test_a_websocket_message_past_the_turn_rate_is_answered_with_an_error_event(api, conversation, user, rates):
    from tests.conversations.test_websocket import cookie_for, socket

    rates(turn="1/min")
    api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": " "}, format="json")  # uses the one turn

    async def send_one():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "hello"})
        answer = await ws.receive_json_from(timeout=10)
        await ws.disconnect()
        return answer

    answer = async_to_sync(send_one)()
    assert answer["type"] == "error"
    assert answer["message"].startswith("too many messages: the limit is 1/min")
    assert 1 <= answer["retry_after"] <= 60


def failures_then_right_password(settings, attempt) -> list:
    """``attempt(password)`` the failure limit's number of times wrongly, then rightly.
    The failure that reaches the limit is already answered as a lockout."""
    return [attempt("wrong") for _ in range(settings.AXES_FAILURE_LIMIT)] + [attempt("pw")]


def test_the_login_page_locks_out_after_the_failure_limit_even_for_the_right_password(user, settings):
    client = Client()
    responses = failures_then_right_password(
        settings, lambda password: client.post("/login/", {"username": "ann", "password": password})
    )
    assert [r.status_code for r in responses[:-2]] == [200] * (settings.AXES_FAILURE_LIMIT - 1)  # the form again
    assert responses[-2].status_code == 429
    locked = responses[-1]
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()
    assert b"too many failed logins" in locked.content
    assert "_auth_user_id" not in client.session


def test_the_admin_login_locks_out_too(settings):
    get_user_model().objects.create_user("boss", password="pw", is_staff=True, is_superuser=True)
    client = Client()
    responses = failures_then_right_password(
        settings, lambda password: client.post("/admin/login/", {"username": "boss", "password": password})
    )
    assert responses[-1].status_code == 429
    assert client.get("/admin/").status_code == 302  # still signed out


def test_basic_auth_locks_out_with_a_clear_429(user, settings):
    client = Client()
    responses = failures_then_right_password(
        settings, lambda password: client.get("/api/conversations/", HTTP_AUTHORIZATION=basic("ann", password))
    )
    assert {r.status_code for r in responses[:-2]} == {401}
    locked = responses[-1]
    assert locked.status_code == 429
    assert locked.json()["detail"].startswith("too many failed logins for this account or address")
    assert int(locked["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()


def test_a_successful_login_before_the_limit_starts_the_count_again(user, settings):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post("/login/", {"username": "ann", "password": "wrong"})
    assert client.post("/login/", {"username": "ann", "password": "pw"}).status_code == 302

"""The websocket middleware stack: the session's user in scope, the server's own send."""

import pytest
from asgiref.sync import async_to_sync
from channels.auth import get_user
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from eunice.websocket_auth import WebsocketAuthMiddlewareStack

pytestmark = pytest.mark.django_db(transaction=True)


def run_stack(scope):
    """Call the stack around an app that notes what it was given: (user, the send it got, the server's send)."""
    seen = {}

    async def app(scope, receive, send):
        seen["user"] = await get_user(scope)
        seen["send"] = send

    async def receive():
        return {"type": "websocket.connect"}

    async def server_send(message):
        pass

    async_to_sync(WebsocketAuthMiddlewareStack(app))(scope, receive, server_send)
    return seen["user"], seen["send"], server_send


def cookie_headers(user):
    client = Client()
    client.force_login(user)
    return [(b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


def test_a_websocket_gets_the_sessions_user_and_the_servers_own_send():
    user = get_user_model().objects.create_user("wsauth")
    scope = {"type": "websocket", "path": "/ws/x/", "headers": cookie_headers(user)}

    seen_user, seen_send, server_send = run_stack(scope)

    assert seen_user.pk == user.pk
    assert seen_send is server_send


def test_a_websocket_without_a_session_is_anonymous():
    seen_user, _, _ = run_stack({"type": "websocket", "path": "/ws/x/", "headers": []})

    assert isinstance(seen_user, AnonymousUser)


def test_http_keeps_the_send_that_saves_the_session():
    user = get_user_model().objects.create_user("httpauth")
    scope = {"type": "http", "path": "/", "headers": cookie_headers(user)}

    seen_user, seen_send, server_send = run_stack(scope)

    assert seen_user.pk == user.pk
    assert seen_send is not server_send

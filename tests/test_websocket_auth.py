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


# The Origin rule: a websocket is accepted from exactly the origins Django's CSRF
# middleware accepts on an HTTP request to the same host.
ORIGIN_SETTINGS = {
    "ALLOWED_HOSTS": ["127.0.0.1", "localhost", ".example.com"],
    "CSRF_TRUSTED_ORIGINS": ["https://app.trusted.test", "https://*.corp.test", "http://legacy.test:8080"],
}
# (Host header, websocket scheme, Origin, accepted?)
ORIGIN_CASES = [
    ("127.0.0.1:8000", "ws", "http://127.0.0.1:8000", True),
    ("127.0.0.1:8000", "ws", "http://127.0.0.1", False),  # port left out
    ("127.0.0.1:8000", "ws", "http://localhost:9999", False),  # another allowed host, another port
    ("127.0.0.1:8000", "ws", "http://localhost:8000", False),  # another allowed host, same port
    ("127.0.0.1:8000", "ws", "https://127.0.0.1:8000", False),  # scheme differs
    ("127.0.0.1:8000", "ws", "http://127.0.0.1:8001", False),
    ("127.0.0.1:8000", "ws", "http://127.0.0.1:8000.evil.test", False),
    ("127.0.0.1:8000", "ws", "http://evil.test", False),
    ("127.0.0.1:8000", "ws", "null", False),
    ("127.0.0.1:8000", "ws", "", False),
    ("localhost", "ws", "http://localhost", True),
    ("localhost", "ws", "http://localhost:80", False),
    ("localhost", "wss", "https://localhost", True),
    ("localhost", "wss", "http://localhost", False),
    ("chat.example.com", "wss", "https://chat.example.com", True),
    ("chat.example.com", "wss", "https://other.example.com", False),
    ("evil.test", "ws", "http://evil.test", False),  # a Host outside ALLOWED_HOSTS
    ("127.0.0.1:8000", "wss", "https://app.trusted.test", True),
    ("127.0.0.1:8000", "wss", "https://app.trusted.test:444", False),
    ("127.0.0.1:8000", "wss", "http://app.trusted.test", False),
    ("127.0.0.1:8000", "wss", "https://a.corp.test", True),
    ("127.0.0.1:8000", "wss", "https://deep.a.corp.test", True),
    ("127.0.0.1:8000", "wss", "http://a.corp.test", False),
    ("127.0.0.1:8000", "wss", "https://a.corp.test:8443", False),
    ("127.0.0.1:8000", "wss", "https://corp.test.evil", False),
    ("127.0.0.1:8000", "ws", "http://legacy.test:8080", True),
    ("127.0.0.1:8000", "ws", "http://legacy.test", False),
]


def csrf_accepts(host: str, scheme: str, origin: str) -> bool:
    """Django's own answer for an HTTP request with this Host and Origin (the oracle)."""
    from django.middleware.csrf import CsrfViewMiddleware
    from django.test import RequestFactory

    request = RequestFactory().post("/", HTTP_HOST=host, HTTP_ORIGIN=origin, secure=scheme == "wss")
    return CsrfViewMiddleware(lambda r: None)._origin_verified(request)


@pytest.mark.parametrize(("host", "scheme", "origin", "accepted"), ORIGIN_CASES)
def test_a_websocket_origin_is_accepted_exactly_when_http_csrf_accepts_it(settings, host, scheme, origin, accepted):
    from eunice.origins import websocket_origin_allowed

    for name, value in ORIGIN_SETTINGS.items():
        setattr(settings, name, value)
    scope = {"type": "websocket", "scheme": scheme, "headers": [(b"host", host.encode()), (b"origin", origin.encode())]}

    assert websocket_origin_allowed(scope) is accepted
    assert csrf_accepts(host, scheme, origin) is accepted


def test_a_websocket_without_an_origin_is_refused(settings):
    from eunice.origins import websocket_origin_allowed

    assert not websocket_origin_allowed({"type": "websocket", "headers": [(b"host", b"localhost")]})


@pytest.mark.parametrize(
    ("origin", "opened"),
    [
        (b"http://127.0.0.1:8000", True),
        (b"http://localhost:9999", False),
        (b"http://127.0.0.1", False),
        (b"https://127.0.0.1:8000", False),
    ],
)
@pytest.mark.parametrize("who", ["staff", "member", "other_tenant_member"])
def test_the_served_app_opens_a_socket_only_from_the_pages_own_origin(who, origin, opened):
    from channels.testing import WebsocketCommunicator

    from conversations.models import Conversation
    from eunice.asgi import application
    from registry.models import TenantMembership

    tenant = "globex" if who == "other_tenant_member" else "acme"
    user = get_user_model().objects.create_user(who, is_staff=who == "staff")
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    conversation = Conversation.objects.create(tenant_id=tenant, user=user)
    headers = [(b"host", b"127.0.0.1:8000"), (b"origin", origin), *cookie_headers(user)]

    async def connect():
        ws = WebsocketCommunicator(application, f"/ws/conversations/{conversation.pk}/", headers=headers)
        connected, _ = await ws.connect(timeout=10)
        if connected:
            await ws.disconnect()
        return connected

    assert async_to_sync(connect)() is opened

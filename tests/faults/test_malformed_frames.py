"""Malformed websocket frames against the real server: an error naming the problem, the socket stays open."""

import json

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.faults.operator import Server, cookie_for, environment, receive_json

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

FRAME_LIMIT = 6 * 32_000 + 1024  # what the consumer reads (EUNICE_MAX_MESSAGE_CHARS escaped, plus keys)

MALFORMED = [
    pytest.param('{"type": "message", "text": ', "unreadable frame", id="bad-json"),
    pytest.param(b"\x00\x01binary", "send JSON as text frames", id="binary"),
    pytest.param(json.dumps({"type": "message", "text": "x" * (FRAME_LIMIT + 10)}), "the frame", id="over-the-limit"),
    pytest.param("[1, 2, 3]", "expected a JSON object with a 'type', got a JSON array", id="array"),
    pytest.param('"message"', "got a JSON string", id="string"),
    pytest.param("42", "got a JSON number", id="number"),
    pytest.param('{"text": "no type"}', "unknown message type None", id="no-type"),
]


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        process = Server(environment(EUNICE_JOBS="0"), name="server-frames")
    yield process
    process.stop()


@pytest.fixture
def chat():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="Frames"), cookie_for(user)


@pytest.mark.parametrize(("frame", "complaint"), MALFORMED)
def test_a_malformed_frame_is_answered_with_an_error_naming_it_and_the_socket_stays_open(
    server, chat, frame, complaint
):
    conversation, cookie = chat
    with server.socket(conversation.pk, cookie) as ws:
        ws.send(frame)
        error = receive_json(ws)
        ws.send(json.dumps({"type": "bogus"}))  # still open and still answering
        after = receive_json(ws)

    assert error["type"] == "error" and complaint in error["message"], error
    assert after["type"] == "error" and "unknown message type 'bogus'" in after["message"]
    log = server.log()
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]

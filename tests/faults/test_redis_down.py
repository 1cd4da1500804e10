"""Redis stopped and started under a running server (a redis-server of the test's own)."""

import json

import pytest
from django.contrib.auth import get_user_model
from websockets.exceptions import ConnectionClosed

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.faults.operator import (
    REDIS_SERVER,
    Redis,
    Server,
    cookie_for,
    environment,
    receive_json,
    receive_until,
    wait_for,
)

pytestmark = [
    pytest.mark.faults,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)"),
]


@pytest.fixture(scope="module")
def redis():
    server = Redis()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_server(redis, django_db_setup, django_db_blocker):
    # One server for the module (no job cluster: these tests are about the web process).
    with django_db_blocker.unblock():
        process = Server(environment(REDIS_URL=redis.url, EUNICE_JOBS="0"), name="server-redis")
    yield process
    process.stop()


@pytest.fixture
def server(shared_server, redis):
    """The module's server, with Redis up and the server seeing it (a test before may have stopped it)."""
    if not redis.running():
        redis.up()
    assert wait_for(lambda: healthy(shared_server), 30, 0.2), shared_server.get("/health/")
    return shared_server


@pytest.fixture
def chat():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user, title="Weather")
    return conversation, cookie_for(user)


def healthy(server):
    status, body = server.get("/health/")
    return status == 200 and body["status"] == "ok"


def test_health_reports_each_dependency_with_its_status_and_latency(server):
    status, body = server.get("/health/")

    assert status == 200 and body["status"] == "ok", body
    assert set(body["checks"]) == {"database", "channel_layer", "cache", "job_broker"}
    for check in body["checks"].values():
        assert check["status"] == "ok" and check["latency_ms"] >= 0 and isinstance(check["required"], bool)


def test_with_redis_down_health_is_503_naming_what_is_down_and_giving_nothing_away(server, redis):
    redis.down()

    status, body = server.get("/health/")

    assert status == 503, body
    assert body["status"] == "down"
    assert {"channel_layer", "cache", "job_broker"} <= set(body["down"])
    assert body["checks"]["channel_layer"] == {
        **body["checks"]["channel_layer"],
        "status": "down",
        "reason": "unreachable",
        "required": True,
    }
    assert body["checks"]["database"]["status"] == "ok"
    printed = json.dumps(body)
    assert "redis://" not in printed and str(redis.port) not in printed and "127.0.0.1" not in printed


def test_with_redis_down_a_websocket_is_told_why_and_closed_not_refused_with_a_500(server, redis, chat):
    conversation, cookie = chat
    redis.down()

    with server.socket(conversation.pk, cookie) as ws:
        frame = receive_json(ws)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)

    assert frame["type"] == "error" and frame["code"] == "unavailable" and frame["down"] == ["channel_layer"]
    assert "channel layer" in frame["message"] and "Redis" in frame["message"]
    assert closed.value.rcvd.code == 1013  # try again later
    assert "Traceback" not in server.log()


def test_when_redis_is_back_health_and_chat_recover_by_themselves(server, redis, chat):
    conversation, cookie = chat
    redis.down()
    assert server.get("/health/")[0] == 503
    redis.up()

    assert wait_for(lambda: healthy(server), 30, 0.5), server.get("/health/")
    with server.socket(conversation.pk, cookie) as ws:
        ws.send(json.dumps({"type": "message", "text": "hello"}))
        frames = receive_until(ws, "done")
    assert not [f for f in frames if f["type"] == "error"], frames


def test_a_socket_open_while_redis_goes_down_says_so_and_chats_again_once_it_is_back(server, redis, chat):
    conversation, cookie = chat
    with server.socket(conversation.pk, cookie) as ws:
        redis.down()
        ws.send(json.dumps({"type": "message", "text": "hello"}))
        refused = receive_json(ws)
        redis.up()
        assert wait_for(lambda: healthy(server), 30, 0.5)
        ws.send(json.dumps({"type": "message", "text": "hello again"}))
        frames = receive_until(ws, "done")

    assert refused["type"] == "error" and refused["code"] == "unavailable" and "cache" in refused["message"]
    assert not [f for f in frames if f["type"] == "error"], frames
    assert "Traceback" not in server.log()

"""Chatting over a real websocket: the full ASGI app, session auth, Origin checks, the channel layer."""

import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from conversations.models import ChatMessage, Conversation
from conversations.replay import replay
from eunice.asgi import application
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db(transaction=True)

CALL = {"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "toolu_1"}]}
ANSWER = {"text": ["It is ", "14°C."], "expect": {"tool_result_contains": "light rain"}}


def cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def socket(conversation_id, cookie=b"", origin=b"http://localhost"):
    headers = [(b"host", b"localhost"), (b"origin", origin)] + ([(b"cookie", cookie)] if cookie else [])
    return WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/", headers=headers)


def ask_over_a_socket(conversation, user, text, *, after_connect=None) -> list[dict]:
    """Open a socket as ``user``, send ``text`` (after ``after_connect()``, if given),
    return every chunk to ``done``."""

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        if after_connect is not None:
            await sync_to_async(after_connect)()
        await ws.send_json_to({"type": "message", "text": text})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return chunks

    return async_to_sync(chat)()


def answer_text(chunks) -> str:
    return "".join(c["text"] for c in chunks if c["type"] == "text_delta")


async def receive_until_done(ws, timeout=10):
    chunks = []
    while True:
        chunk = await ws.receive_json_from(timeout=timeout)
        chunks.append(chunk)
        if chunk["type"] == "done":
            return chunks


def test_a_full_conversation_streams_over_the_websocket(model, weather_tool, conversation, user):
    model([CALL, ANSWER])

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        connected, _ = await ws.connect()
        assert connected
        await ws.send_json_to({"type": "message", "text": "Weather in Oslo?"})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return chunks

    chunks = async_to_sync(chat)()
    kinds = [c["type"] for c in chunks]
    collapsed = [kind for n, kind in enumerate(kinds) if n == 0 or kinds[n - 1] != kind]  # deltas may be merged
    assert collapsed == ["tool_call", "tool_result", "text_delta", "done"]
    assert "".join(c["text"] for c in chunks if c["type"] == "text_delta") == "It is 14°C."
    assert chunks[0]["status_message"] == "Checking the weather"
    assert all("ts" in c for c in chunks)
    assert ChatMessage.objects.get(conversation=conversation, role="assistant").text == "It is 14°C."
    assert replay(conversation).identical


def test_cancel_over_the_websocket_stops_the_answer_at_once(model, conversation, user):
    model([{"text": [f"w{n} " for n in range(200)], "delay": 0.05}])

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_json_to({"type": "message", "text": "talk"})
        first = await ws.receive_json_from(timeout=10)
        assert first["type"] == "text_delta"
        started = time.monotonic()
        await ws.send_json_to({"type": "cancel"})
        chunks = await receive_until_done(ws)
        elapsed = time.monotonic() - started
        await ws.disconnect()
        return chunks, elapsed

    chunks, elapsed = async_to_sync(chat)()
    assert chunks[-1] == {**chunks[-1], "type": "done", "cancelled": True}
    # the answer would stream 10 s more; generous for a loaded machine (bench/cancel.py measures it)
    assert elapsed < 5.0, f"done arrived {elapsed * 1000:.0f} ms after cancel"


def test_an_anonymous_socket_is_refused(conversation):
    async def connect():
        ws = socket(conversation.pk)
        connected, code = await ws.connect()
        return connected, code

    assert async_to_sync(connect)() == (False, 4401)


def test_a_foreign_origin_is_refused(conversation, user):
    async def connect():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user), origin=b"https://evil.example")
        connected, _ = await ws.connect()
        return connected

    assert async_to_sync(connect)() is False


def test_another_tenants_conversation_cannot_be_opened(conversation):
    stranger = get_user_model().objects.create_user("eve", password="pw")
    TenantMembership.objects.create(user=stranger, tenant_id=OTHER_TENANT)

    async def connect():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(stranger))
        return await ws.connect()

    assert async_to_sync(connect)() == (False, 4404)


def test_access_is_rechecked_on_every_message(conversation, user):
    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await sync_to_async(TenantMembership.objects.filter(user=user).update)(tenant_id=OTHER_TENANT)
        await ws.send_json_to({"type": "message", "text": "hi"})
        reply = await ws.receive_json_from(timeout=5)
        closed = await ws.receive_output(timeout=5)
        return reply, closed

    reply, closed = async_to_sync(chat)()
    assert reply == {"type": "error", "message": "you no longer have access to this conversation"}
    assert closed == {"type": "websocket.close", "code": 4403}


def test_bad_messages_get_specific_errors(conversation, user, settings):
    settings.EUNICE_MAX_MESSAGE_CHARS = 100

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        replies = []
        for message in ({"type": "shout"}, {"type": "message", "text": "  "}, {"type": "message", "text": "x" * 101}):
            await ws.send_json_to(message)
            replies.append((await ws.receive_json_from(timeout=5))["message"])
        await ws.disconnect()
        return replies

    assert async_to_sync(chat)() == [
        "unknown message type 'shout'; expected 'message', 'answer', 'elicitation', 'cancel' or 'approval'",
        "a message needs non-empty 'text'",
        "the message has 101 characters; the limit is 100",
    ]


def test_a_user_can_run_only_so_many_answers_at_once(model, conversation, user, settings):
    settings.EUNICE_MAX_RUNS_PER_USER = 1
    model([{"text": [f"w{n} " for n in range(40)], "delay": 0.05}])
    second = Conversation.objects.create(tenant_id=TENANT, user=user)

    async def chat():
        cookie = await sync_to_async(cookie_for)(user)
        ws1, ws2 = socket(conversation.pk, cookie), socket(second.pk, cookie)
        await ws1.connect()
        await ws2.connect()
        await ws1.send_json_to({"type": "message", "text": "long"})
        await ws1.receive_json_from(timeout=10)  # the first answer is streaming
        await ws2.send_json_to({"type": "message", "text": "another"})
        refused = await ws2.receive_json_from(timeout=5)
        await ws1.send_json_to({"type": "cancel"})
        await receive_until_done(ws1)
        await ws1.disconnect()
        await ws2.disconnect()
        return refused

    assert async_to_sync(chat)() == {
        "type": "error",
        "refused": True,  # nothing was stored: the page gives the text back
        "message": "you already have 1 answers running; wait or cancel one",
    }


def test_a_socket_in_another_process_gets_the_answer_through_the_channel_layer(model, conversation, user):
    from channels.layers import get_channel_layer

    from conversations.display import group_name

    model([{"text": ["Hello ", "from ", "afar."]}])

    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        layer = get_channel_layer()
        elsewhere = await layer.new_channel()  # a socket served by another process (several workers)
        await layer.group_add(group_name(conversation.pk), elsewhere)
        await layer.group_send(
            group_name(conversation.pk), {"type": "watcher.joined", "channel": elsewhere, "process": "another"}
        )
        while (greeting := await layer.receive(elsewhere))["type"] != "watcher.present":
            pass  # our own announcement comes back through the group first
        await ws.send_json_to({"type": "message", "text": "hi"})
        here = await receive_until_done(ws)
        there = []
        while not there or there[-1]["type"] != "done":
            message = await layer.receive(elsewhere)
            if message["type"] == "conversation.chunk":
                there.append(message["chunk"])
        await ws.disconnect()
        return greeting, here, there

    greeting, here, there = async_to_sync(chat)()
    text = lambda chunks: "".join(c["text"] for c in chunks if c["type"] == "text_delta")  # noqa: E731
    assert text(here) == text(there) == "Hello from afar."
    assert greeting["process"] != "another"


def test_chunks_of_a_turn_in_this_process_skip_the_channel_layer(model, conversation, user, monkeypatch):
    from channels.layers import get_channel_layer

    sent = []
    layer_class = type(get_channel_layer())
    original = layer_class.group_send

    async def counting_group_send(self, group, message):
        sent.append(message["type"])
        await original(self, group, message)

    monkeypatch.setattr(layer_class, "group_send", counting_group_send)
    model([{"text": ["a", "b", "c"]}])

    chunks = ask_over_a_socket(conversation, user, "hi")
    assert answer_text(chunks) == "abc"
    assert "conversation.chunk" not in sent
    assert sent[0] == "watcher.joined" and sent[-1] == "watcher.left"


def test_queued_text_deltas_are_merged_but_nothing_else_is():
    from conversations.display import coalesce

    chunks = [
        {"type": "text_delta", "text": "a", "ts": 1},
        {"type": "text_delta", "text": "b", "ts": 2},
        {"type": "tool_call", "name": "x", "ts": 3},
        {"type": "text_delta", "text": "c", "ts": 4},
    ]
    assert coalesce(chunks) == [
        {"type": "text_delta", "text": "ab", "ts": 1},
        {"type": "tool_call", "name": "x", "ts": 3},
        {"type": "text_delta", "text": "c", "ts": 4},
    ]


def test_a_turn_takes_the_users_rights_as_they_are_now_not_as_they_were_at_connect(
    model, make_tool, conversation, user
):
    from conversations.models import WorkingSetEntry

    make_tool("whoami", lambda inputs, context: "staff" if "staff" in context.capabilities else "not staff")
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="whoami")
    model(
        [
            {"tool_uses": [{"name": "whoami", "input": {}, "id": "t1"}]},
            {"text": ["You are not staff."], "expect": {"tool_result_contains": "not staff"}},
        ]
    )
    user.is_staff = True
    user.save()

    def demote():  # after the socket opened, before the message
        type(user).objects.filter(pk=user.pk).update(is_staff=False)

    chunks = ask_over_a_socket(conversation, user, "Am I staff?", after_connect=demote)

    assert answer_text(chunks) == "You are not staff."

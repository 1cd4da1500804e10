"""JSON nested past EUNICE_JSON_MAX_DEPTH is a clean refusal wherever it enters, and the
conversation works for the next message: REST bodies, websocket frames, slash-command
arguments (the offline provider), a model's tool input, and arguments at dispatch."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from eunice.jsonlimits import JSONTooDeep, check_depth, loads_bounded
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 64  # EUNICE_JSON_MAX_DEPTH's default


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_value(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture
def api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def say(api, conversation, text):
    return api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": text}, format="json")


@pytest.mark.parametrize("depth", [LIMIT + 1, 1_000, 100_000])
def test_a_deep_rest_body_is_a_400_naming_the_limit(api, conversation, depth):
    response = api.post(
        f"/api/conversations/{conversation.pk}/messages/",
        data=f'{{"text": {nested(depth)}}}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "EUNICE_JSON_MAX_DEPTH" in response.json()["detail"] and "64 levels" in response.json()["detail"]
    assert say(api, conversation, "hello").status_code == 201


def test_a_body_at_the_limit_is_parsed(api, conversation):
    response = api.post(
        f"/api/conversations/{conversation.pk}/messages/",
        data=f'{{"text": "hi", "x": {nested(LIMIT - 1)}}}',
        content_type="application/json",
    )
    assert "EUNICE_JSON_MAX_DEPTH" not in str(response.json())  # parsed: refused for its field, not its depth


@pytest.mark.parametrize("depth", [LIMIT + 1, 15_000])
def test_deep_slash_command_arguments_are_answered_naming_the_limit(api, conversation, weather_tool, depth):
    response = say(api, conversation, f'/weather {{"city": {nested(depth)}}}')
    assert response.status_code == 201
    assert "EUNICE_JSON_MAX_DEPTH" in response.json()["message"]["text"]
    after = say(api, conversation, '/weather {"city": "Oslo"}')
    assert after.status_code == 201 and "light rain" in after.json()["message"]["text"]


@pytest.mark.parametrize(
    ("frame", "rule"),
    [
        (f'{{"type": "message", "text": {nested(LIMIT + 1)}}}', "EUNICE_JSON_MAX_DEPTH"),
        (f'{{"type": "message", "text": {nested(30_000)}}}', "EUNICE_JSON_MAX_DEPTH"),
        (nested(1_000_000), "the limit is"),  # past the frame's length limit, refused before any scan
        ('{"type": "message", "text": ', "unreadable frame"),
    ],
)
def test_a_deep_websocket_frame_is_an_error_and_the_socket_still_chats(conversation, user, weather_tool, frame, rule):
    async def chat():
        ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
        await ws.connect()
        await ws.send_to(text_data=frame)
        refused = await ws.receive_json_from(timeout=10)
        await ws.send_json_to({"type": "message", "text": '/weather {"city": "Oslo"}'})
        chunks = await receive_until_done(ws)
        await ws.disconnect()
        return refused, chunks

    refused, chunks = async_to_sync(chat)()
    assert refused["type"] == "error" and rule in refused["message"]
    assert any("light rain" in str(chunk.get("result", chunk)) for chunk in chunks if chunk["type"] == "tool_result")


def test_a_models_deep_tool_input_is_refused_and_the_next_message_works(api, model, conversation, weather_tool):
    deep = {"city": nested_value(500)}
    model([{"tool_uses": [{"name": "weather", "input": deep, "id": "t1"}]}, {"text": ["Sorry."]}])
    response = say(api, conversation, "Weather?")
    assert response.status_code == 201  # the turn ends, saying why (and not in the model's words)
    assert response.json()["stop_reason"] == "error"
    assert "EUNICE_JSON_MAX_DEPTH" in response.json()["error"]
    assert "EUNICE_JSON_MAX_DEPTH" not in response.json()["message"]["text"]
    model([{"tool_uses": [{"name": "weather", "input": {"city": "Oslo"}, "id": "t2"}]}, {"text": ["Rainy."]}])
    assert say(api, conversation, "And now?").json()["message"]["text"] == "Rainy."


@pytest.mark.parametrize("depth", [LIMIT + 1, 100_000])
def test_deep_arguments_never_reach_a_handler(make_tool, call, depth):
    ran = []
    make_tool(
        "keep",
        lambda inputs, context: ran.append(1) or "kept",
        input_schema={"type": "object", "properties": {"data": {}}},
    )
    result = call("keep", data=nested_value(depth))
    assert result.content.startswith("⚠ schema hint: invalid input for keep: the input is nested deeper than 64")
    assert "EUNICE_JSON_MAX_DEPTH" in result.content and ran == []
    assert "kept" in call("keep", data=nested_value(LIMIT - 1)).content


def test_brackets_inside_strings_are_text_not_depth():
    assert loads_bounded('{"a": "' + "[" * 10_000 + '"}') == {"a": "[" * 10_000}
    assert loads_bounded(b'["\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]')


@pytest.mark.parametrize("text", [nested(1_000_000), '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_any_depth_past_the_limit_is_measured_without_recursion(text):
    with pytest.raises(JSONTooDeep, match="EUNICE_JSON_MAX_DEPTH"):
        loads_bounded(text)
    with pytest.raises(JSONTooDeep):
        check_depth(nested_value(1_000_000))

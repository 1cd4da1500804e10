"""An MCP server's request for input during a turn reaches the person on the chat socket as
an ``elicitation`` chunk; their answer goes back to the server, and the model reads only the
tool's result, never the request."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from conversations.models import WorkingSetEntry
from registry.mcp.config import ServerConfig
from tests.conversations.test_websocket import cookie_for, receive_until_done, socket
from tests.mcp.conftest import add_server, manager, mcp  # noqa: F401 - manager: a fresh one per test

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def greet(manager, conversation):  # noqa: F811
    manager.connect(ServerConfig.from_model(add_server()))
    WorkingSetEntry.objects.create(conversation=conversation, tool_name=mcp("greet"))
    return mcp("greet")


def script(greet: str, heard: str) -> list[dict]:
    return [
        {"tool_uses": [{"name": greet, "input": {}, "id": "t1"}]},
        {"text": ["Done."], "expect": {"tool_result_contains": heard}},
    ]


async def asked(conversation, user):
    """A socket that sent a message and got the server's request: (socket, request)."""
    ws = socket(conversation.pk, await sync_to_async(cookie_for)(user))
    await ws.connect()
    await ws.send_json_to({"type": "message", "text": "Greet me."})
    while (request := await ws.receive_json_from(timeout=30))["type"] != "elicitation":
        pass
    return ws, request


def chat(conversation, user, answer: dict) -> tuple[dict, list[dict]]:
    """Send a message, answer the elicitation with ``answer``; the request and the chunks after it."""

    async def run():
        ws, request = await asked(conversation, user)
        await ws.send_json_to({"question_id": request["question_id"], **answer})
        chunks = await receive_until_done(ws, timeout=30)
        await ws.disconnect()
        return request, chunks

    return async_to_sync(run)()


def test_the_person_fills_in_the_servers_form_and_the_tool_answers_with_it(model, conversation, user, greet):
    model(script(greet, "Hello Alice, 41"))
    request, chunks = chat(
        conversation, user, {"type": "elicitation", "action": "accept", "content": {"name": "Alice", "age": 41}}
    )
    assert (request["server"], request["mode"], request["message"]) == ("demo", "form", "Who are you?")
    assert request["schema"]["required"] == ["name", "age"]
    assert "".join(c.get("text", "") for c in chunks if c["type"] == "text_delta") == "Done."


def test_a_decline_in_the_chat_page_is_what_the_server_hears(model, conversation, user, greet):
    model(script(greet, "no greeting: the person chose decline"))
    chat(conversation, user, {"type": "elicitation", "action": "decline"})


def test_an_answer_without_a_known_action_is_refused_naming_the_choices(model, conversation, user, greet):
    model(script(greet, "no greeting: the person chose cancel"))

    async def run():
        ws, request = await asked(conversation, user)
        await ws.send_json_to({"type": "elicitation", "question_id": request["question_id"], "action": "maybe"})
        while (refusal := await ws.receive_json_from(timeout=30))["type"] != "error":
            pass
        await ws.send_json_to({"type": "elicitation", "question_id": request["question_id"], "action": "cancel"})
        await receive_until_done(ws, timeout=30)
        await ws.disconnect()
        return refusal["message"]

    assert "'action' (one of accept, decline, cancel)" in async_to_sync(run)()


def test_a_servers_model_call_is_approved_in_the_chat_page_and_billed_to_its_tool(model, conversation, user, greet):
    from conversations.models import UsageLog

    summarize = mcp("summarize")
    WorkingSetEntry.objects.create(conversation=conversation, tool_name=summarize)
    model(
        [
            {"tool_uses": [{"name": summarize, "input": {"text": "the tides"}, "id": "t1"}]},
            {"text": ["Tides rise twice a day."], "usage": {"input_tokens": 1000, "output_tokens": 10}},
            {"text": ["Done."], "expect": {"tool_result_contains": "summary by claude-test: Tides rise twice a day."}},
        ]
    )
    request, _chunks = chat(conversation, user, {"type": "elicitation", "action": "accept"})
    assert (request["mode"], request["system"], request["max_tokens"]) == ("sampling", "One line.", 50)
    assert request["messages"] == [{"role": "user", "text": "Summarize: the tides"}]
    billed = UsageLog.objects.get(kind="tool", name=summarize)
    assert billed.cost_usd == pytest.approx(1000 * 3e-6 + 10 * 15e-6)

"""MCP server faults inside real turns: a stdio server that crashes mid-call, hangs, writes
non-JSON or a 10 MB line; an HTTP server that answers 500, answers slowly or drops its
stream. The call ends with an error naming the server and the fault, the turn goes on,
and the next message's call to the same server works."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ConversationEvent, TurnRecord, WorkingSetEntry
from registry.mcp.config import ServerConfig
from tests.faults.mcp_proxy import FaultProxy
from tests.mcp.conftest import ROGUE, add_server, mcp

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def offer(conversation, *names: str) -> None:
    for name in names:
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)


def calling(name: str, arguments: dict, expected: str, number: int) -> list[dict]:
    return [
        {"tool_uses": [{"name": name, "input": arguments, "id": f"toolu_{number}"}]},
        {"text": [f"answer {number}"], "expect": {"tool_result_contains": expected}},
    ]


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def result_of(conversation, turn: int) -> str:
    (event,) = ConversationEvent.objects.filter(conversation=conversation, turn=turn, event_type="tool_result")
    return event.data["content"]


def assert_fault_then_recovery(model, conversation, user, faulty: str, arguments: dict, says: str, add: str):
    """Turn 1 calls ``faulty`` and reads an error saying ``says``; turn 2's call to ``add`` works."""
    model([*calling(faulty, arguments, says, 1), *calling(add, {"a": 20, "b": 22}, "42", 2)])
    offer(conversation, faulty, add)

    assert run(conversation, user, "break it").text == "answer 1"
    assert result_of(conversation, 1).startswith("✗ error") and "Traceback" not in result_of(conversation, 1)

    assert run(conversation, user, "and now?").text == "answer 2"
    assert list(TurnRecord.objects.filter(conversation=conversation).values_list("status", flat=True)) == [
        "finished",
        "finished",
    ]


STDIO_FAULTS = {
    "crashes mid-call": ("demo", "crash", {}, "exited with code 3"),
    "hangs": ("demo", "slow", {"seconds": 3600}, "did not answer 'slow' within 1 s"),
    "prints non-JSON": ("rogue", "garbage", {}, "non-JSON-RPC output on stdout"),
    "prints a 10 MB line": ("rogue", "huge", {}, "a stdout line over 8 MB"),
}


@pytest.mark.parametrize(("server", "tool", "arguments", "says"), STDIO_FAULTS.values(), ids=STDIO_FAULTS.keys())
def test_a_stdio_server_fault_fails_the_call_and_the_next_message_reaches_the_server(
    manager,
    model,
    conversation,
    user,
    server,
    tool,
    arguments,
    says,
):
    manager.connect(ServerConfig.from_model(add_server("demo", call_timeout_seconds=1.0)))
    if server == "rogue":
        manager.connect(ServerConfig.from_model(add_server("rogue", args=[ROGUE])))
    # The second turn calls the demo server (the rogue one only writes bad lines): the one that
    # crashed or hung must answer again, and the rogue one must not have taken it down.
    assert_fault_then_recovery(model, conversation, user, mcp(tool, server), arguments, says, mcp("add"))


@pytest.fixture
def proxied(manager, http_demo):
    proxy = FaultProxy(http_demo)
    row = add_server("web", transport="streamable_http", command="", args=[], url=proxy.url, allow_private_network=True)
    row.call_timeout_seconds = 2.0
    row.save()
    manager.connect(ServerConfig.from_model(row))
    yield proxy
    proxy.stop()


HTTP_FAULTS = {
    "answers 500": ("500", "500"),
    "answers slowly": ("slow", "did not answer 'add' within 2 s"),
    "drops its stream": ("drop", "✗ error"),
}


@pytest.mark.parametrize(("mode", "says"), HTTP_FAULTS.values(), ids=HTTP_FAULTS.keys())
def test_an_http_server_fault_fails_the_call_and_the_next_message_reaches_the_server(
    proxied, model, conversation, user, mode, says
):
    proxied.mode = mode
    model(
        [
            *calling(mcp("add", "web"), {"a": 1, "b": 1}, says, 1),
            *calling(mcp("add", "web"), {"a": 20, "b": 22}, "42", 2),
        ]
    )
    offer(conversation, mcp("add", "web"))

    assert run(conversation, user, "break it").text == "answer 1"
    assert result_of(conversation, 1).startswith("✗ error") and "Traceback" not in result_of(conversation, 1)

    proxied.mode = "pass"
    assert run(conversation, user, "and now?").text == "answer 2"
    assert "42" in result_of(conversation, 2)

"""A server's request for input mid-call reaches the person behind the call, on either
revision (a server-to-client request at 2025-11-25, input_required at 2026-07-28), and
their accept, decline or cancel is what the server gets; a call nobody watches has nobody
to ask, and the request is refused."""

import asyncio
import contextvars

import pytest

from registry.context import ToolContext
from registry.mcp.config import ServerConfig
from registry.mcp.connection import Connection
from registry.mcp.elicitation import Elicitation, settle
from tests.conftest import TENANT, text
from tests.mcp.conftest import DEMO, WAIT, add_server, mcp

pytestmark = pytest.mark.django_db(transaction=True)


class Person:
    """The person on the chat page, answering every request the same way."""

    def __init__(self, answer: dict | None) -> None:
        self.answer, self.asked = answer, []

    async def ask(self, question: str, choices: list[str], timeout: float) -> str | None:
        raise AssertionError("an elicitation is not a plain question")

    async def elicit(self, request: Elicitation, timeout: float) -> dict | None:
        self.asked.append(request)
        return self.answer


ALICE = {"action": "accept", "content": {"name": "Alice", "age": "41", "smuggled": "x"}}


@pytest.fixture
def demo(manager):
    manager.connect(ServerConfig.from_model(add_server()))


def test_the_person_fills_in_the_form_and_the_server_gets_their_typed_fields(demo, call):
    person = Person(ALICE)
    result = call(mcp("greet"), context={"questions": person})
    assert text(result) == "Hello Alice, 41"
    (asked,) = person.asked
    assert (asked.server, asked.mode, asked.message) == ("demo", "form", "Who are you?")
    assert set(asked.schema["properties"]) == {"name", "age"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_decline_or_a_cancel_is_what_the_server_hears(demo, call, action):
    assert text(call(mcp("greet"), context={"questions": Person({"action": action})})) == (
        f"no greeting: the person chose {action}"
    )


def test_no_answer_in_time_is_a_cancel(demo, call):
    assert text(call(mcp("greet"), context={"questions": Person(None)})) == "no greeting: the person chose cancel"


def test_a_url_request_shows_the_person_the_url_and_never_sends_them_content(demo, call):
    person = Person({"action": "accept", "content": {"password": "hunter2"}})
    assert text(call(mcp("sign_in"), context={"questions": person})) == "sign-in: accept"
    (asked,) = person.asked
    assert (asked.mode, asked.url, asked.elicitation_id) == ("url", "https://demo.example/sign-in", "sign-1")
    assert settle(asked, person.answer) == {"action": "accept"}


def test_a_call_nobody_watches_has_nobody_to_ask_and_the_server_is_refused(demo, call):
    result = call(mcp("greet"))
    assert "no person is there to answer" in result.content
    assert "Traceback" not in result.content


def test_the_coroutine_path_asks_the_person_too(demo, registry):
    person = Person(ALICE)
    context = ToolContext(TENANT, "u1", questions=person)
    assert text(asyncio.run(registry.aexecute_tool(mcp("greet"), {}, context))) == "Hello Alice, 41"


def _at_2026_07_28(answer: dict | None) -> tuple[str | None, str, list]:
    """greet on a session that speaks 2026-07-28 (input_required), answered by a person."""
    person, config = Person(answer), ServerConfig.from_model(add_server())

    async def run() -> tuple[str | None, str]:
        connection = Connection(config, None, on_tools_changed=_ignore, on_lost=lambda _: None, modern_first=True)
        await connection.open(WAIT)
        try:
            result = await connection.call("greet", {}, WAIT, asker=person)
            return connection.protocol_version, result.content[0].text
        finally:
            await connection.close()

    version, said = asyncio.run(run())
    return version, said, person.asked


async def _ignore(_tools) -> None:
    pass


def test_at_2026_07_28_the_input_required_round_asks_the_person_and_retries_with_their_answer():
    version, said, asked = _at_2026_07_28(ALICE)
    assert version == "2026-07-28"
    assert said == "Hello Alice, 41" and [request.mode for request in asked] == ["form"]


def test_at_2026_07_28_a_decline_is_what_the_server_hears():
    assert _at_2026_07_28({"action": "decline"})[1] == "no greeting: the person chose decline"


def test_a_server_of_2026_07_28_only_asks_the_person_through_the_registry_path_too(manager, call):
    manager.connect(ServerConfig.from_model(add_server("modern", args=[DEMO, "stdio-modern"])))
    person = Person(ALICE)
    assert text(call(mcp("greet", "modern"), context={"questions": person})) == "Hello Alice, 41"
    assert [request.server for request in person.asked] == ["modern"]


def test_a_request_while_calls_of_two_conversations_are_in_flight_is_refused_not_guessed():
    from registry.mcp.elicitation import Askers
    from registry.mcp.elicitation import Person as Behind

    class Conversation:
        def __init__(self, key: str) -> None:
            self.key = key

    def from_the_sessions_own_task():  # where a 2025-11-25 request is answered: no call's context
        return contextvars.Context().run(askers.whose)

    askers = Askers()
    with askers.calling(Behind(Conversation("c1"))), askers.calling(Behind(Conversation("c1"))):
        assert from_the_sessions_own_task()[0] is not None  # two calls of one conversation: one person
        with askers.calling(Behind(Conversation("c2"))):
            person, why = from_the_sessions_own_task()
            assert person is None and "cannot be told apart" in why

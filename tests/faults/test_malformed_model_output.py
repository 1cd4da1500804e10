"""Malformed model output through real turns (the scripted Messages API server behind the
real client): each is answered in-band or ends the turn saying why, nothing is lost, and
the conversation answers its next message."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent, TurnRecord
from conversations.replay import replay

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

FINE = {"text": ["Still ", "here."]}


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def call(name: str, number: int = 0, **tool) -> dict:
    return {"name": name, "id": f"toolu_{number}", **tool}


def results(conversation, turn: int = 1) -> list[str]:
    rows = ConversationEvent.objects.filter(conversation=conversation, turn=turn, event_type="tool_result")
    return [row.data["content"] for row in rows.order_by("sequence")]


def assert_the_conversation_goes_on(model_server, conversation, user, turns: int = 1) -> None:
    """The next message is answered, every turn is closed, every message kept, replay agrees."""
    assert run(conversation, user, "are you there?").text == "Still here."
    statuses = list(TurnRecord.objects.filter(conversation=conversation).values_list("status", flat=True))
    assert len(statuses) == turns + 1 and "running" not in statuses
    users = ChatMessage.objects.filter(conversation=conversation, role="user").count()
    assert users == turns + 1
    report = replay(conversation)
    assert report.identical, report.first_difference


def test_a_call_to_an_unknown_tool_is_answered_with_a_hint_and_the_turn_goes_on(
    model, weather_tool, conversation, user
):
    server = model(
        [
            {"tool_uses": [call("no_such_tool", input={"x": 1})]},
            {"text": ["Sorry."], "expect": {"tool_result_contains": "no_such_tool"}},
            FINE,
        ]
    )
    assert run(conversation, user, "use a tool").text == "Sorry."
    (result,) = results(conversation)
    assert result.startswith("⚠ schema hint") and "Traceback" not in result
    assert_the_conversation_goes_on(server, conversation, user)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"city": "Par', "unreadable input for tool 'weather' (Unterminated string"),
        ('{"city": "Paris"} trailing', "unreadable input for tool 'weather' (Extra data)"),
        ('["Paris"]', "tool 'weather' input that is not a JSON object"),
    ],
    ids=["cut-short", "trailing-text", "an-array"],
)
def test_tool_arguments_that_are_not_a_json_object_end_the_turn_saying_why_and_the_next_message_works(
    model, weather_tool, conversation, user, raw, says
):
    server = model([{"tool_uses": [call("weather", raw_input=raw)]}, FINE])
    outcome = run(conversation, user, "weather in Paris?")
    # The error is the turn's, never the model's words (#27 item 5): nothing was said.
    assert outcome.text == "" and outcome.error.startswith("The model sent") and says in outcome.error
    assert outcome.stop_reason == "error" and results(conversation) == []  # the tool never ran
    (error,) = ConversationEvent.objects.filter(conversation=conversation, turn=1, event_type="error")
    assert says in error.data["message"]
    assert_the_conversation_goes_on(server, conversation, user)


def test_fifty_tool_calls_in_one_reply_all_run_and_are_answered_in_order(model, weather_tool, conversation, user):
    cities = [f"City{n}" for n in range(50)]
    server = model(
        [
            {"tool_uses": [call("weather", n, input={"city": city}) for n, city in enumerate(cities)]},
            {"text": ["All done."], "expect": {"tool_result_contains": "City49: 14°C"}},
            FINE,
        ]
    )
    assert run(conversation, user, "weather everywhere").text == "All done."
    answered = [block for block in server.requests[1].messages[-1]["content"] if block["type"] == "tool_result"]
    assert [block["tool_use_id"] for block in answered] == [f"toolu_{n}" for n in range(50)]
    assert [content.split(":")[0].split()[-1] for content in results(conversation)] == cities
    assert_the_conversation_goes_on(server, conversation, user)


def nested(depth: int) -> str:
    return '{"city": ' + "[" * depth + "]" * depth + "}"


def test_nested_arguments_within_the_depth_limit_get_a_schema_hint_and_the_turn_goes_on(
    model, weather_tool, conversation, user
):
    server = model(
        [
            {"tool_uses": [call("weather", raw_input=nested(40))]},
            {"text": ["Fixed."], "expect": {"tool_result_contains": "city: must be string"}},
            FINE,
        ]
    )
    assert run(conversation, user, "weather?").text == "Fixed."
    (result,) = results(conversation)
    assert result.startswith("⚠ schema hint: invalid input for weather")
    assert_the_conversation_goes_on(server, conversation, user)


def test_arguments_nested_100_000_deep_end_the_turn_naming_the_limit_and_the_next_message_works(
    model, weather_tool, conversation, user
):
    server = model([{"tool_uses": [call("weather", raw_input=nested(100_000))]}, FINE])
    outcome = run(conversation, user, "weather?")
    assert "nested deeper than 64 levels, the limit (EUNICE_JSON_MAX_DEPTH)" in outcome.error
    assert "RecursionError" not in outcome.error and results(conversation) == []
    assert_the_conversation_goes_on(server, conversation, user)

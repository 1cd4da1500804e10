"""A reload draws the conversation from its stored events (conversations/timeline.py), and
offline mode's answers read as a person wants them (conversations/presenting.py)."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent, TurnRecord
from conversations.presenting import for_person
from conversations.timeline import timeline
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def stored(conversation, turn, question, events, answer=None, status=TurnRecord.Status.FINISHED):
    ChatMessage.objects.create(
        conversation=conversation, message_id=f"u{turn}", tenant_id=TENANT, role="user", text=question
    )
    if answer is not None:
        ChatMessage.objects.create(
            conversation=conversation, message_id=f"a{turn}", tenant_id=TENANT, role="assistant", text=answer
        )
    rows = [("user_message", {"text": question, "turn": turn}), *events]
    for sequence, (kind, data) in enumerate(rows, start=1):
        ConversationEvent.objects.create(
            conversation=conversation, turn=turn, sequence=sequence, event_type=kind, data=data
        )
    TurnRecord.objects.create(conversation=conversation, turn=turn, status=status)


def test_a_turn_is_drawn_as_it_streamed_its_last_text_left_to_the_stored_answer(conversation):
    stored(
        conversation,
        1,
        "Rain?",
        [
            ("thinking", {"text": "Look it up."}),
            ("text_delta", {"text": "Let me check."}),
            ("llm_request", {"model": "m"}),  # the staff's: not drawn
            ("tool_call", {"tool_use_id": "t1", "name": "query", "input": {}}),
            ("tool_result", {"tool_use_id": "t1", "name": "query", "content": "✓ ok. 1 row.\nx", "error": None}),
            ("text_delta", {"text": "It rains."}),
            ("done", {"turn": 1}),
        ],
        answer="It rains.",
    )
    types = [(c["type"], c.get("text") or c.get("name")) for c in timeline(conversation)]
    assert types == [
        ("user", "Rain?"),
        ("thinking", "Look it up."),
        ("text_delta", "Let me check."),
        ("tool_call", "query"),
        ("tool_result", "query"),
        ("done", "It rains."),
    ]
    assert timeline(conversation)[4]["outcome"] == "ok"


def test_a_cancelled_turn_keeps_its_partial_answer_and_says_it_was_cancelled(conversation):
    stored(
        conversation, 1, "Talk", [("status", {"cancelled": "by the user"}), ("done", {"turn": 1})], answer="word0 word1"
    )
    done = timeline(conversation)[-1]
    assert done == {"type": "done", "stop_reason": "cancelled", "cancelled": True, "text": "word0 word1", "cards": None}


def test_a_running_turn_ends_on_running_with_its_text_so_far(conversation):
    stored(conversation, 1, "Go", [("text_delta", {"text": "So far"})], status=TurnRecord.Status.RUNNING)
    assert timeline(conversation)[-2:] == [{"type": "text_delta", "text": "So far"}, {"type": "running"}]


ASKED = {"type": "elicitation", "question_id": "q1", "server": "demo", "mode": "form", "message": "Name?", "schema": {}}


def test_a_request_still_waiting_for_the_person_is_drawn_again_and_one_settled_is_not(conversation):
    asked = ("status", {"question_id": "q1", "elicitation": "demo", "mode": "form", "asked": ASKED})
    stored(conversation, 1, "Go", [("tool_call", {"name": "greet"}), asked], status=TurnRecord.Status.RUNNING)
    assert timeline(conversation)[-2:] == [ASKED, {"type": "running"}]
    ConversationEvent.objects.create(
        conversation=conversation, turn=1, sequence=4, event_type="status", data={"settled": "q1"}
    )
    assert timeline(conversation)[-2:] == [
        {"type": "tool_call", "tool_use_id": None, "name": "greet"},
        {"type": "running"},
    ]


def test_a_finished_turn_offers_nothing_to_answer(conversation):
    asked = ("status", {"question_id": "q1", "elicitation": "demo", "mode": "form", "asked": ASKED})
    stored(conversation, 1, "Go", [asked, ("done", {})], answer="Done.")
    assert not [c for c in timeline(conversation) if c["type"] in ("elicitation", "question")]


def test_messages_without_events_are_drawn_as_their_text(conversation):
    ChatMessage.objects.create(conversation=conversation, message_id="u", tenant_id=TENANT, role="user", text="Hi")
    ChatMessage.objects.create(
        conversation=conversation, message_id="a", tenant_id=TENANT, role="assistant", text="Hello"
    )
    assert timeline(conversation) == [{"type": "user", "text": "Hi"}, {"type": "answer", "text": "Hello", "cards": []}]


@pytest.mark.django_db(transaction=True)
def test_an_unknown_tool_is_a_hint_that_names_it(conversation, user):
    async_to_sync(run_turn)(conversation, text="/frobnicate {}", user=user)
    result = next(c for c in timeline(conversation) if c["type"] == "tool_result")
    assert result["outcome"] == "hint" and result["unknown"] is True
    assert ChatMessage.objects.filter(role="assistant").get().text.startswith("**No tool is called `frobnicate`.**")


@pytest.mark.django_db(transaction=True)
def test_offline_search_results_show_each_tools_fields_not_its_json_schema(conversation, user):
    outcome = async_to_sync(run_turn)(conversation, text='/search_tools {"query": "plan the steps"}', user=user)
    assert "input_schema" not in outcome.text and '"properties"' not in outcome.text
    assert "- **/plan** `{" in outcome.text


def test_wrong_arguments_name_what_the_tool_takes_and_suggest_no_tool():
    content = (
        "⚠ schema hint: invalid input for search_tools: query: this field is required (rule: required); "
        'expected {"type":"string","minLength":1}\ndid you mean:\n  1. search_tools (score 1.00)\n'
        "     input: {query: string, limit?: integer}"
    )
    shown = for_person("search_tools", content)
    assert shown.startswith("**Hint:** invalid input for search_tools: query: this field is required (rule: required)")
    assert "`/search_tools` takes `{query: string, limit?: integer}`" in shown
    assert "Did you mean" not in shown and "score" not in shown and '"minLength"' not in shown


def test_a_table_preview_becomes_a_markdown_table_and_an_error_an_error():
    content = (
        "✓ ok. 12 rows.\nschema: a:int64\n⚠ data_quality: 2 dropped\n"
        "preview: first 5 and last 5 of 12 rows\na | b\n1 | x\n... (2 more rows) ...\n3 | y"
    )
    assert for_person("query", content) == (
        "> **Note** (data_quality): 2 dropped\n\n| a | b |\n|---|---|\n| 1 | x |\n| … 2 more rows … |  |\n| 3 | y |"
        "\n\n*First 5 and last 5 of 12 rows.*"
    )
    assert for_person("query", "✗ error (SQLError): no such table") == "**Error** (SQLError): no such table"
    assert for_person("query", "✓ ok. 1 row.\na | b\n1 | x | y") == "a | b\n1 | x | y"  # not a table: as written

"""convene: a panel of helpers discusses a question in rounds, each in a pane labelled with
its name, each answering what was said before it; a moderator sums up, and what each
participant cost comes back beside the summary, within the panel's budget.

Through the real anthropic SDK against the scripted Messages API server, in the loop.
"""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ChatMessage, ConversationEvent, WorkingSetEntry
from conversations.timeline import timeline

pytestmark = pytest.mark.django_db(transaction=True)

PANEL = [
    {"name": "Ann", "perspective": "the finance team: cost first"},
    {"name": "Ben", "perspective": "the engineers: reliability first"},
]
QUESTION = "Should we move the nightly reports to the new warehouse?"
COSTLY = {"input_tokens": 1000, "output_tokens": 100}  # $0.0045 at $3 / $15 per million
FREE = {"input_tokens": 0, "output_tokens": 0}


def convene_call(**extra):
    inputs = {"question": QUESTION, "participants": PANEL, **extra}
    return {"tool_uses": [{"name": "convene", "input": inputs, "id": "c1"}], "usage": FREE}


def speech(text, usage=FREE, heard=None):
    turn = {"text": [text], "usage": usage}
    if heard:
        turn["expect"] = {"user_text_contains": heard}
    return turn


def tool_result(conversation) -> str:
    return ConversationEvent.objects.get(conversation=conversation, event_type="tool_result").data["content"]


@pytest.fixture
def offered(conversation):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="convene")
    return conversation


def test_the_panel_speaks_in_turn_in_labelled_panes_and_the_moderator_sums_up(model, offered, user):
    server = model(
        [
            convene_call(rounds=2),
            speech("ANN-1: the warehouse halves the bill."),
            speech("BEN-1: Ann, the bill matters less than the 3 outages.", heard="ANN-1"),
            speech("ANN-2: Ben, the outages were in the old one.", heard="BEN-1"),
            speech("BEN-2: then a trial month.", heard="ANN-2"),
            speech("SUMMARY: both agree on a trial month.", heard="BEN-2"),
            {"text": ["The panel recommends a trial month."], "expect": {"tool_result_contains": "SUMMARY: both"}},
        ]
    )

    outcome = async_to_sync(run_turn)(offered, text=QUESTION, user=user)

    assert outcome.text == "The panel recommends a trial month."
    started = ConversationEvent.objects.filter(conversation=offered, event_type="subtask_started").order_by("sequence")
    assert [e.data["label"] for e in started] == [
        "Ann · round 1",
        "Ben · round 1",
        "Ann · round 2",
        "Ben · round 2",
        "Moderator",
    ]
    ben_first = server.requests[2].messages[0]["content"][0]["text"]
    assert "You are Ben" in ben_first and "reliability first" in ben_first and "Ann: ANN-1" in ben_first
    # The speeches are in the panes, never in the answer the person keeps.
    assert ChatMessage.objects.get(conversation=offered, role="assistant").text == outcome.text
    texts = ConversationEvent.objects.filter(conversation=offered, event_type="subtask_text")
    assert sorted(e.data["subtask"] for e in texts) == ["1", "2", "3", "4", "5"]
    replayed = [c for c in timeline(offered) if c["type"] == "subtask_started"]
    assert replayed[0]["label"] == "Ann · round 1"


def test_each_participants_cost_is_reported_and_rolled_into_the_call(model, offered, user):
    model(
        [
            convene_call(rounds=1),
            speech("Ann speaks at length.", usage=COSTLY),
            speech("Ben is brief."),
            speech("Summary.", usage=COSTLY),
            {"text": ["Done."], "expect": {"tool_result_contains": "| Ann | 1 | $0.0045 |"}},
        ]
    )

    async_to_sync(run_turn)(offered, text=QUESTION, user=user)

    result = tool_result(offered)
    assert "| Ben | 1 | $0.0000 |" in result and "| Moderator | 1 | $0.0045 |" in result
    assert "| total | 3 | $0.0090 |" in result
    finished = ConversationEvent.objects.filter(conversation=offered, event_type="subtask_finished")
    assert sorted(e.data["cost_usd"] for e in finished) == [0, 0.0045, 0.0045]


def test_a_spent_budget_ends_the_discussion_and_says_who_never_spoke(model, offered, user):
    server = model(
        [
            convene_call(rounds=2, max_cost_usd=0.2),
            # Ann may spend a fifth of the $0.20; her one call costs $0.21, all of it and more.
            speech("ANN-1.", usage={"input_tokens": 50_000, "output_tokens": 4_000}),
            {"text": ["Only Ann spoke."], "expect": {"tool_result_contains": "before Ben spoke"}},
        ]
    )

    async_to_sync(run_turn)(offered, text=QUESTION, user=user)

    assert len(server.requests) == 3  # the parent's call and its answer; Ann's one speech
    result = tool_result(offered)
    assert "| Ben | 0 | $0.0000 |" in result and "stopped early: Moderator (budget)" in result


def test_two_participants_of_one_name_are_a_hint_naming_the_field(model, offered, user):
    twins = [{"name": "Ann"}, {"name": " ann "}]
    model(
        [
            {"tool_uses": [{"name": "convene", "input": {"question": QUESTION, "participants": twins}, "id": "c1"}]},
            {"text": ["I will name them apart."], "expect": {"tool_result_contains": "participants: give each"}},
        ]
    )

    assert async_to_sync(run_turn)(offered, text=QUESTION, user=user).text == "I will name them apart."
    assert not ConversationEvent.objects.filter(conversation=offered, event_type="subtask_started").exists()


def test_outside_a_conversation_turn_convene_is_a_hint(call):
    result = call("convene", question=QUESTION, participants=PANEL)
    assert result.content.startswith("⚠ schema hint: convene only works inside a conversation turn")

"""A conversation rebuilt from its recorded effects is byte-for-byte what was persisted."""

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import Conversation, ConversationEvent, PolicyRule
from conversations.replay import replay
from conversations.state import DispatchState
from conversations.turns import begin_turn, finish_turn
from tests import handlers
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


def big(inputs, context):
    return "x" * 40_000  # its tool_result event is stored as a blob


@pytest.fixture
def conversation(make_tool, settings):
    settings.RESULT_BUDGET_TOKENS = 10_000_000  # big's result reaches the events whole, not as a handle
    make_tool("report", handlers.with_side_channels)
    make_tool("big", big)
    make_tool("analyze", handlers.echo)
    PolicyRule.objects.create(name="report first", tool_name="analyze", kind="requires_prior_tool", parameter="report")
    conversation = Conversation.objects.create(tenant_id=TENANT)
    for text, blocks in (
        ("analyse it", [{"id": "t1", "name": "analyze", "input": {}}, {"id": "t2", "name": "big", "input": {}}]),
        ("now the report", [{"id": "t3", "name": "report", "input": {}}, {"id": "t4", "name": "nope", "input": {}}]),
    ):
        runtime = begin_turn(conversation, user_message=text)
        state = DispatchState.for_conversation(conversation)
        async_to_sync(dispatch_tool_calls)(blocks, runtime, state)
        runtime.display.send({"type": "text_delta", "text": "All done."})
        finish_turn(runtime, "All done.", [{"type": "text", "text": "All done."}])
        state.cancel.release()
    return conversation


def test_replaying_the_effects_rebuilds_events_and_messages_byte_for_byte(conversation):
    report = replay(conversation)
    assert report.identical, report.first_difference
    assert report.turns == 2 and report.messages == 2
    assert report.events == ConversationEvent.objects.filter(conversation=conversation).count()
    assert ConversationEvent.objects.filter(conversation=conversation, blob__isnull=False).exists()


def test_the_replay_command_reports_identical(conversation, capsys):
    call_command("replay_conversation", conversation.pk)
    assert "identical to what was persisted" in capsys.readouterr().out


def test_a_tampered_event_is_caught_and_the_command_fails(conversation, capsys):
    event = ConversationEvent.objects.filter(conversation=conversation, event_type="tool_call").first()
    event.data = {**event.data, "input": {"forged": True}}
    event.save()
    with pytest.raises(SystemExit) as exit_info:
        call_command("replay_conversation", conversation.pk)
    assert exit_info.value.code == 1
    assert "replay differs: event" in capsys.readouterr().out


def test_a_turn_that_cannot_be_recorded_leaves_no_answer_or_events_behind():
    # The answer, the turn's last events and its record are one transaction:
    # a replayable conversation never holds an answer without its record.
    from django.db import IntegrityError

    from conversations.models import ChatMessage, TurnRecord

    conversation = Conversation.objects.create(tenant_id=TENANT)
    runtime = begin_turn(conversation, user_message="hello")
    ConversationEvent.objects.create(
        conversation=conversation, turn=runtime.turn, sequence=2, event_type="status"
    )  # the slot of the turn's "done" is taken
    events_before = ConversationEvent.objects.filter(conversation=conversation).count()

    with pytest.raises(IntegrityError):
        finish_turn(runtime, "An answer.")

    assert not ChatMessage.objects.filter(conversation=conversation, role=ChatMessage.Role.ASSISTANT).exists()
    assert ConversationEvent.objects.filter(conversation=conversation).count() == events_before
    assert TurnRecord.objects.get(conversation=conversation).status == TurnRecord.Status.RUNNING

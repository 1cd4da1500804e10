"""In a conversation: the model asks for a tool, staff approve it, the next turn offers and calls it."""

import pytest
from asgiref.sync import async_to_sync

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import Conversation
from conversations.state import DispatchState
from conversations.turns import begin_turn, finish_turn
from registry.custom_tools import approve_custom_tool
from registry.models import ToolDefinition, ToolJob
from registry.tool_jobs import run_build_job
from tests.builder.conftest import APPROVE, PLUS_ONE, auditor_turn, builder_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


def turn(conversation, user, message, *blocks):
    runtime = begin_turn(conversation, user=user, user_message=message)
    state = DispatchState.for_conversation(conversation)
    try:
        results = async_to_sync(dispatch_tool_calls)(list(blocks), runtime, state)
    finally:
        state.cancel.release()
    finish_turn(runtime, "done")
    return results


def test_a_tool_the_model_asked_for_is_offered_and_called_after_approval(models, registry, staff, custom_tools_on):
    models(builder_turn(PLUS_ONE), auditor_turn(APPROVE))
    conversation = Conversation.objects.create(tenant_id=TENANT, user=staff)
    asked = turn(
        conversation,
        staff,
        "I need a tool that adds one",
        {
            "id": "toolu_1",
            "name": "build_custom_tool",
            "input": {"name": "plus_one", "request": "Take an integer n and return n plus one."},
        },
    )
    assert asked[0].result.error is None, asked[0].result.content
    job = ToolJob.objects.get(tool_name="plus_one", conversation_id=str(conversation.pk))
    run_build_job(job.pk)
    assert "plus_one" not in {t["name"] for t in registry.get_tools_for_llm(TENANT)}

    approve_custom_tool(ToolDefinition.objects.get(name="plus_one"), acting_user=staff)

    assert "plus_one" in {t["name"] for t in registry.get_tools_for_llm(TENANT)}
    called = turn(conversation, staff, "now add one to 41", {"id": "toolu_2", "name": "plus_one", "input": {"n": 41}})
    assert called[0].result.error is None and "42" in called[0].result.content
    assert "plus_one" not in {t["name"] for t in registry.get_tools_for_llm("globex")}

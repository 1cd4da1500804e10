"""A model's call to a tool it was not offered in that call is refused with a Hint; a person's command runs."""

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ConversationEvent

pytestmark = pytest.mark.django_db(transaction=True)

CALL_PLAN = {
    "tool_uses": [{"name": "plan", "input": {"steps": [{"title": "Pack", "status": "pending"}]}, "id": "toolu_p"}],
}


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def test_a_chat_mode_model_calling_plan_is_refused_with_the_tools_it_may_use(model, conversation, user):
    conversation.mode = "chat"
    conversation.save()
    server = model([CALL_PLAN, {"text": ["Understood."], "expect": {"tool_result_contains": "not one of the tools"}}])
    assert run(conversation, user, "plan my trip").text == "Understood."
    offered = [tool["name"] for tool in server.requests[0].tools]
    assert "plan" not in offered
    (result,) = [b for b in server.requests[1].messages[-1]["content"] if b["type"] == "tool_result"]
    text = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    assert all(name in text for name in offered)
    conversation.refresh_from_db()
    assert not conversation.plan  # the tool never ran
    (event,) = ConversationEvent.objects.filter(event_type="tool_result")
    assert event.data["content"].startswith("⚠ schema hint: plan is not one of the tools offered to you now")


def test_a_person_typing_a_tool_command_offline_runs_it_even_off_the_modes_surface(conversation, user):
    conversation.mode = "chat"
    conversation.save()
    outcome = run(conversation, user, '/plan {"steps": [{"title": "Pack", "status": "pending"}]}')
    assert "not one of the tools" not in outcome.text
    conversation.refresh_from_db()
    assert conversation.plan["steps"][0]["title"] == "Pack"

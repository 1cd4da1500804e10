"""A helper on a model priced only by the catalog (no prices on its row) is held to its
budget: before the catalog, every model call cost $0 out of the box and no delegated
budget ever tripped. The chat model on the scripted Messages API delegates to a helper
on a scripted OpenAI-compatible server, through the real agent loop."""

import pytest

from conversations.models import ConversationEvent, WorkingSetEntry
from llm.models import ModelConfig
from llm.scripted import ScriptedChatCompletionsServer
from tests.conversations.test_agent_loop import run

pytestmark = pytest.mark.django_db(transaction=True)


def delegating(budget: float, result: str) -> list[dict]:
    """The chat model's turns: delegate within ``budget``, then answer once the result says ``result``."""
    task = {"task": "Count the rivers.", "max_cost_usd": budget}
    return [
        {"tool_uses": [{"name": "delegate", "input": task, "id": "t1"}]},
        {"text": ["Done."], "expect": {"tool_result_contains": result}},
    ]


def test_a_helper_on_a_catalog_priced_model_is_stopped_before_a_call_past_its_budget(model, conversation, user):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="delegate")
    model(delegating(0.00001, "stopped early (budget)"))
    with ScriptedChatCompletionsServer([{"text": ["Twelve rivers."]}]) as helper:
        ModelConfig.objects.create(role="delegate", provider="openai", model="gpt-4o-mini", base_url=helper.url)
        run(conversation, user, "How many rivers? Delegate it.")
    assert helper.requests == []  # its first call would already cost more than its budget
    stop = ConversationEvent.objects.get(conversation=conversation, event_type="status", data__stopped="budget")
    assert stop.data["next_call_usd"] > 0.00001


def test_within_its_budget_the_same_helper_answers(model, conversation, user):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="delegate")
    model(delegating(1.0, "Twelve rivers."))
    with ScriptedChatCompletionsServer([{"text": ["Twelve rivers."]}]) as helper:
        ModelConfig.objects.create(role="delegate", provider="openai", model="gpt-4o-mini", base_url=helper.url)
        run(conversation, user, "How many rivers? Delegate it.")
    assert len(helper.requests) == 1 and helper.failures == []

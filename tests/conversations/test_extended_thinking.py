"""Extended thinking is a per-model setting: the request asks for it, the thinking pane fills,
and thinking (signed or redacted) goes back to the API unchanged across tool calls and turns."""

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ValidationError

from conversations.loop import run_turn
from conversations.recording import ListDisplay
from llm.models import ModelConfig
from llm.scripted.render import redacted_data, signature_for

pytestmark = pytest.mark.django_db(transaction=True)

THINKS = {"thinking_budget_tokens": 2048}


def run(conversation, user, text, display=None):
    return async_to_sync(run_turn)(conversation, text=text, user=user, display=display)


def thinking_on(budget=2048):
    ModelConfig.objects.filter(role="chat").update(max_output_tokens=4096, thinking_budget_tokens=budget)


def test_a_model_with_a_thinking_budget_asks_for_thinking_and_the_pane_fills(model, conversation, user):
    model([{"thinking": ["Weighing ", "it up."], "text": ["Yes."], "expect": THINKS}])
    thinking_on()
    display = ListDisplay()

    outcome = run(conversation, user, "Should I?", display)

    assert outcome.text == "Yes."
    assert [c["text"] for c in display.chunks if c["type"] == "thinking"] == ["Weighing ", "it up."]


def test_thinking_and_redacted_thinking_come_back_unchanged_across_tool_calls_and_turns(
    model, weather_tool, conversation, user
):
    server = model(
        [
            {
                "thinking": ["I need the weather."],
                "redacted_thinking": ["opaque-1"],
                "tool_uses": [{"name": "weather", "input": {"city": "Oslo"}}],
                "expect": THINKS,
            },
            {"text": ["Rainy."], "expect": {"tool_result_contains": "Oslo", **THINKS}},
            {"text": ["Still rainy."], "expect": THINKS},
        ]
    )
    thinking_on()

    assert run(conversation, user, "Weather in Oslo?").text == "Rainy."
    assert run(conversation, user, "And now?").text == "Still rainy."

    sent_back = [
        {"type": "thinking", "thinking": "I need the weather.", "signature": signature_for("I need the weather.")},
        {"type": "redacted_thinking", "data": redacted_data("opaque-1")},
    ]
    assert server.requests[1].messages[-2]["content"][:2] == sent_back
    assert server.requests[2].messages[1]["content"][:2] == sent_back, "history keeps them too"


def test_a_thinking_budget_the_api_would_refuse_is_refused_by_the_model_form():
    config = ModelConfig(role="chat", provider="anthropic", model="m", max_output_tokens=2048)
    for budget in (512, 2048):
        config.thinking_budget_tokens = budget
        with pytest.raises(ValidationError, match="at least 1024"):
            config.clean()
    config.thinking_budget_tokens = 1024
    config.clean()

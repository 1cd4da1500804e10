"""call_llm asks the model of the role it names, on whichever provider that role's row
names, and its cost (from the catalog) reaches the usage log, charged to the tool."""

import pytest

from conversations.models import UsageLog
from llm.models import ModelConfig
from tests.conftest import TENANT, text

# call_llm reads the model's row on a database thread: it must see the committed row.
pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = {"text": ["Bonjour."], "usage": {"input_tokens": 1000, "output_tokens": 100}}
GPT_4O_MINI = 1000 * 0.15e-6 + 100 * 0.6e-6  # its catalog prices at OpenAI (genai-prices)


def test_a_role_of_its_own_on_the_responses_api_answers_and_is_charged(call, scripted_responses):
    translator = scripted_responses([{**ANSWER, "expect": {"user_text_contains": "Say hello in French."}}])
    ModelConfig.objects.create(
        role="translator", provider="openai_responses", model="gpt-4o-mini", base_url=translator.url
    )

    result = call("call_llm", prompt="Say hello in French.", role="translator")

    assert text(result).strip() == "Bonjour."
    assert translator.requests[0].body["model"] == "gpt-4o-mini"
    row = UsageLog.objects.get(kind="tool")
    assert (row.name, row.tenant_id, row.user_id) == ("call_llm", TENANT, "u1")
    assert row.cost_usd == pytest.approx(GPT_4O_MINI)


def test_the_delegate_role_on_chat_completions_answers_call_llm(call, scripted_chat):
    helper = scripted_chat([ANSWER])
    ModelConfig.objects.create(role="delegate", provider="openai", model="gpt-4o-mini", base_url=helper.url)

    assert text(call("call_llm", prompt="Say hello in French.", role="delegate")).strip() == "Bonjour."
    assert helper.requests[0].body["model"] == "gpt-4o-mini"
    assert UsageLog.objects.get(kind="tool").cost_usd == pytest.approx(GPT_4O_MINI)


def test_call_llm_never_offers_a_hosted_web_search_past_our_tools_gates(call, scripted_responses):
    # call_llm is one completion with no tools: a row's web_search claim does not turn one on.
    server = scripted_responses([ANSWER])
    ModelConfig.objects.create(
        role="chat",
        provider="openai_responses",
        model="gpt-4o-mini",
        base_url=server.url,
        capabilities={"web_search": True},
    )
    assert text(call("call_llm", prompt="Say hello in French.")).strip() == "Bonjour."
    assert "tools" not in server.requests[0].body

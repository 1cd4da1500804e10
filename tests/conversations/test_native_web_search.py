"""Capability filtering's double guard, for real: our web_search tool leaves the model's
tools only when the model's row claims the web_search capability AND its provider
delivers it (the Responses API's hosted search). A conversation through the real agent
loop, the real ``openai`` SDK and the scripted Responses (or Chat Completions) server."""

import pytest

from conversations.models import PolicyRule
from llm.models import ModelConfig
from llm.scripted import ScriptedChatCompletionsServer, ScriptedResponsesServer
from registry.models import ApprovalRule, SeedLog, ToolDefinition
from registry.surface import clear_capability_cache
from registry.surface_floor import FLOOR_KEY
from tests.conversations.test_agent_loop import run

pytestmark = pytest.mark.django_db(transaction=True)

HOSTED = {"type": "web_search"}


@pytest.fixture(autouse=True)
def web_search_resident(settings):
    """Our web_search tool is on the resident surface (it needs a search backend to be offered)."""
    settings.WEB_SEARCH_BACKEND = "tests.knowledge.test_web.fake_backend"
    floor = [{"name": "search_tools", "reason": "anchor"}, {"name": "web_search", "reason": "usage"}]
    SeedLog.objects.update_or_create(key=FLOOR_KEY, defaults={"value": {"floor": floor}})
    clear_capability_cache()
    yield
    clear_capability_cache()


def serve(server_class, provider, turns, **capabilities):
    server = server_class(turns).start()
    ModelConfig.objects.update_or_create(
        role="chat",
        defaults={
            "provider": provider,
            "model": "gpt-5-mini",
            "base_url": server.url,
            "capabilities": capabilities,
            "max_output_tokens": 1024,
        },
    )
    return server


def function_names(body):
    tools = body.get("tools") or []
    return [t.get("name") or (t.get("function") or {}).get("name") for t in tools if t.get("type") == "function"]


def test_a_model_that_claims_web_search_on_the_responses_api_searches_natively(conversation, user):
    server = serve(
        ScriptedResponsesServer,
        "openai_responses",
        [{"web_searches": ["oslo weather today"], "text": ["Rain in Oslo ", "today."]}],
        web_search=True,
    )
    try:
        outcome = run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    assert outcome.text == "Rain in Oslo today."
    body = server.requests[0].body
    assert HOSTED in body["tools"]
    assert "web_search" not in function_names(body)
    assert "search_tools" in function_names(body)


def test_without_the_claim_our_web_search_tool_stays_and_no_hosted_search_is_offered(conversation, user):
    server = serve(ScriptedResponsesServer, "openai_responses", [{"text": "I can look that up."}], web_search=False)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    body = server.requests[0].body
    assert "web_search" in function_names(body)
    assert HOSTED not in body["tools"]


def test_a_claim_the_provider_cannot_deliver_removes_nothing(conversation, user):
    server = serve(ScriptedChatCompletionsServer, "openai", [{"text": "I can look that up."}], web_search=True)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    assert "web_search" in function_names(server.requests[0].body)


def test_a_tenant_whose_web_searches_wait_for_a_person_gets_no_hosted_search(conversation, user):
    # The hosted search has no gate: the provider would search unasked, past the approval rule.
    ApprovalRule.objects.create(name="searches need a person", tenant_id=conversation.tenant_id, tool_name="web_search")
    server = serve(ScriptedResponsesServer, "openai_responses", [{"text": "I can look that up."}], web_search=True)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    body = server.requests[0].body
    assert HOSTED not in body["tools"]
    assert "web_search" in function_names(body)  # ours, which waits for the person


def test_a_tenant_with_a_policy_rule_on_web_search_gets_no_hosted_search(conversation, user):
    PolicyRule.objects.create(
        name="analysts only",
        tenant_id=conversation.tenant_id,
        tool_name="web_search",
        kind="requires_capability",
        parameter="group:analysts",
        action="block",
    )
    server = serve(ScriptedResponsesServer, "openai_responses", [{"text": "I can look that up."}], web_search=True)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    body = server.requests[0].body
    assert HOSTED not in body["tools"] and "web_search" in function_names(body)


def test_a_web_search_tool_that_is_switched_off_takes_the_hosted_search_with_it(conversation, user):
    tool = ToolDefinition.objects.get(name="web_search")
    tool.enabled = False
    tool.save()
    server = serve(ScriptedResponsesServer, "openai_responses", [{"text": "I cannot search."}], web_search=True)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert server.failures == []
    body = server.requests[0].body
    assert HOSTED not in body["tools"] and "web_search" not in function_names(body)


def test_another_tenants_approval_rule_leaves_the_hosted_search_on(conversation, user):
    ApprovalRule.objects.create(name="their searches need a person", tenant_id="someone-else", tool_name="web_search")
    server = serve(ScriptedResponsesServer, "openai_responses", [{"text": "Rain."}], web_search=True)
    try:
        run(conversation, user, "What's the weather in Oslo today?")
    finally:
        server.stop()
    assert HOSTED in server.requests[0].body["tools"]


def test_the_model_calls_a_tool_and_answers_through_the_responses_api(conversation, user):
    server = serve(
        ScriptedResponsesServer,
        "openai_responses",
        [
            {
                "tool_uses": [
                    {"name": "search_tools", "input": {"query": "chart", "reasoning": "to find one"}, "id": "c1"}
                ]
            },
            {"text": ["Found ", "them."], "expect": {"tool_result_contains": "create_chart"}},
        ],
        web_search=True,
        strict_tools=True,
    )
    try:
        outcome = run(conversation, user, "Which tools draw charts?")
    finally:
        server.stop()
    assert server.failures == []
    assert (outcome.text, outcome.model_calls) == ("Found them.", 2)
    sent = next(t for t in server.requests[0].body["tools"] if t.get("name") == "search_tools")
    assert sent["strict"] is True and "reasoning" in sent["parameters"]["required"]
    items = server.requests[1].body["input"]
    call = next(n for n, item in enumerate(items) if item.get("type") == "function_call")
    assert (items[call]["call_id"], items[call + 1]["type"], items[call + 1]["call_id"]) == (
        "c1",
        "function_call_output",
        "c1",
    )

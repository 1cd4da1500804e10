"""The tool builder and auditor roles run on whichever provider their rows name: here the
builder on an OpenAI-compatible server's Chat Completions and the auditor on the Responses
API, each through the real ``openai`` SDK to its scripted server, each call charged."""

import pytest

from conversations.models import UsageLog
from llm.models import ModelConfig
from llm.scripted import ScriptedChatCompletionsServer, ScriptedResponsesServer
from registry.models import JobStatus, ToolDefinition
from registry.tool_jobs import request_build, run_build_job
from tests.builder.conftest import APPROVE, PLUS_ONE, auditor_turn, builder_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db

USAGE = {"usage": {"input_tokens": 1000, "output_tokens": 100}}


@pytest.fixture
def servers():
    """servers(builder_turns, auditor_turns) -> the two started servers, set as the roles' models."""
    started = []

    def start(builder_turns, auditor_turns):
        builder = ScriptedChatCompletionsServer(builder_turns).start()
        auditor = ScriptedResponsesServer(auditor_turns).start()
        started.extend([builder, auditor])
        ModelConfig.objects.create(role="tool_builder", provider="openai", model="gpt-4o-mini", base_url=builder.url)
        ModelConfig.objects.create(
            role="tool_auditor", provider="openai_responses", model="gpt-4o-mini", base_url=auditor.url
        )
        return builder, auditor

    yield start
    for server in started:
        server.stop()
    for server in started:
        assert server.failures == [], server.failures


def test_a_tool_is_built_on_chat_completions_and_audited_on_the_responses_api(servers, custom_tools_on):
    builder, auditor = servers([{**builder_turn(PLUS_ONE), **USAGE}], [{**auditor_turn(APPROVE), **USAGE}])
    job = request_build(name="plus_one", request="Take an integer n and return n plus one.", tenant_id=TENANT)

    assert run_build_job(job.pk) == JobStatus.TESTING
    tool = ToolDefinition.objects.get(name="plus_one")
    assert [r["passed"] for r in tool.test_results["results"]] == [True, True]
    assert tool.test_results["review"]["summary"] == APPROVE["summary"]
    assert (len(builder.requests), len(auditor.requests)) == (1, 1)
    assert "You write custom tools" in builder.requests[0].body["messages"][0]["content"]
    assert "You audit custom tools" in auditor.requests[0].body["instructions"]


def test_both_calls_are_charged_at_the_catalog_price_of_their_model(servers, staff, custom_tools_on):
    servers([{**builder_turn(PLUS_ONE), **USAGE}], [{**auditor_turn(APPROVE), **USAGE}])
    job = request_build(
        name="plus_one", request="Take an integer n and return n plus one.", tenant_id=TENANT, user_id=str(staff.pk)
    )
    run_build_job(job.pk)
    rows = UsageLog.objects.filter(kind="llm").order_by("id")
    assert [(r.tenant_id, r.user_id, r.name, r.input_tokens, r.output_tokens) for r in rows] == [
        (TENANT, str(staff.pk), "gpt-4o-mini", 1000, 100)
    ] * 2
    # gpt-4o-mini at OpenAI: $0.15 in, $0.60 out per million tokens (genai-prices).
    assert [r.cost_usd for r in rows] == [pytest.approx(1000 * 0.15e-6 + 100 * 0.6e-6)] * 2

"""A server's request for a model's completion (sampling, 2025-11-25) runs on Eunice's own
model only once the person behind the call approved exactly what would be sent; what it
cost is charged to the call that asked, on that server's tool."""

import pytest

from registry.mcp.config import ServerConfig
from tests.conftest import text
from tests.conversations.conftest import model  # noqa: F401 - the scripted model of the chat role
from tests.mcp.conftest import add_server, mcp
from tests.mcp.test_elicitation import Person

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY = {
    "text": ["Tides rise twice a day."],
    "usage": {"input_tokens": 1000, "output_tokens": 10},
    "expect": {"user_text_contains": "Summarize: the tides"},
}


@pytest.fixture
def demo(manager):
    manager.connect(ServerConfig.from_model(add_server()))


def test_an_approved_request_is_answered_by_eunices_model_and_its_cost_rides_on_the_call(demo, model, call):  # noqa: F811
    model([SUMMARY])
    person = Person({"action": "accept"})
    result = call(mcp("summarize"), text="the tides", context={"questions": person})
    assert text(result) == "summary by claude-test: Tides rise twice a day."
    assert result.cost == pytest.approx(1000 * 3e-6 + 10 * 15e-6)
    (asked,) = person.asked
    assert (asked.mode, asked.system, asked.max_tokens) == ("sampling", "One line.", 50)
    assert asked.messages == ({"role": "user", "text": "Summarize: the tides"},)


def test_the_cost_is_written_to_the_usage_log_under_the_servers_tool(demo, model, call):  # noqa: F811
    from conversations.models import UsageLog

    model([SUMMARY])
    call(mcp("summarize"), text="the tides", context={"questions": Person({"action": "accept"})})
    row = UsageLog.objects.get()
    assert (row.kind, row.name) == ("tool", mcp("summarize"))
    assert row.cost_usd == pytest.approx(1000 * 3e-6 + 10 * 15e-6)


def test_a_declined_request_never_reaches_the_model(demo, model, call):  # noqa: F811
    scripted = model([SUMMARY])
    result = call(mcp("summarize"), text="the tides", context={"questions": Person({"action": "decline"})})
    assert "no summary: the person did not approve the sampling request" in text(result)
    assert result.cost == 0 and scripted.requests == []


def test_a_call_nobody_watches_cannot_sample(demo, call):
    assert "no summary: Sampling refused: no person is there to answer" in text(call(mcp("summarize"), text="x"))

"""A tool's cost (call_llm's model call) reaches the usage log, charged to the tool, the
tenant and the user, however the tool was called: from the command line, the playground,
another handler, a custom tool's call_tool, or a conversation (once, not twice)."""

import json

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from conversations.loop import run_turn
from conversations.models import UsageLog, WorkingSetEntry
from registry.contract import Ok
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT
from tests.sandbox.conftest import approved_tool, custom_tools_on, staff  # noqa: F401 (fixtures)

# call_llm reads the model's row on a database thread: it must see the committed row.
pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = {"text": ["Bonjour."], "usage": {"input_tokens": 100, "output_tokens": 10}}
COST = 100 * 3e-6 + 10 * 15e-6  # the chat row's prices (tests/conversations/conftest.py)


def charged() -> list[tuple[str, str, str, float]]:
    return [(r.name, r.tenant_id, r.user_id, round(r.cost_usd, 8)) for r in UsageLog.objects.filter(kind="tool")]


def test_a_call_from_the_command_line_is_charged_to_its_tenant_and_user(model, capsys):
    model([ANSWER])
    call_command(
        "call_tool", "call_llm", "--input", json.dumps({"prompt": "hello"}), "--tenant", TENANT, "--user", "ops"
    )
    assert "Bonjour." in capsys.readouterr().out
    assert charged() == [("call_llm", TENANT, "ops", round(COST, 8))]


def test_a_call_from_the_playground_is_charged_to_the_staff_member_and_their_tenant(model):
    model([ANSWER])
    boss = get_user_model().objects.create_user("boss", password="pw", is_staff=True)
    TenantMembership.objects.create(user=boss, tenant_id=TENANT)
    client = Client()
    client.force_login(boss)
    page = client.post("/playground/call_llm/", {"inputs": json.dumps({"prompt": "hello"})})
    assert "Bonjour." in page.content.decode()
    assert charged() == [("call_llm", TENANT, str(boss.pk), round(COST, 8))]


def test_a_call_made_by_another_handler_is_charged_to_the_tool_that_spent_it(model, make_tool, call):
    model([ANSWER])

    def summarise(inputs, context):
        inner = context.registry.execute_tool("call_llm", {"prompt": "hello"}, context)
        return Ok(rows=1, data=f"summary: {inner.content}")

    make_tool("summarise", summarise)
    assert "Bonjour." in call("summarise", tenant=OTHER_TENANT).content
    assert charged() == [("call_llm", OTHER_TENANT, "u1", round(COST, 8))]


def test_a_call_made_by_a_custom_tools_call_tool_is_charged(approved_tool, make_tool, call, staff, monkeypatch):  # noqa: F811
    # call_llm may never be called from sandboxed code: a paid lookup that may stands in for it.
    from registry.contract import Effects
    from tools import catalog

    make_tool("paid_lookup", lambda inputs, context: Ok(rows=1, data="found", effects=Effects(cost=0.25)))
    monkeypatch.setattr(catalog, "SANDBOX_CALLABLE", catalog.SANDBOX_CALLABLE | {"paid_lookup"})
    approved_tool(
        "lookup_twice",
        "result = call_tool('paid_lookup', {}) + call_tool('paid_lookup', {})",
        dependencies=["paid_lookup"],
    )
    result = call("lookup_twice", tenant="acme", context={"user_id": str(staff.pk)})
    assert "foundfound" in result.content, result.content
    assert charged() == [("paid_lookup", "acme", str(staff.pk), 0.25)] * 2


def test_a_call_in_a_conversation_is_charged_once_and_spends_the_turns_budget(model, conversation, user):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="call_llm")
    model(
        [
            {"tool_uses": [{"name": "call_llm", "input": {"prompt": "hello"}, "id": "t1"}]},
            ANSWER,
            {"text": ["It said Bonjour."], "expect": {"tool_result_contains": "Bonjour."}},
        ]
    )
    outcome = async_to_sync(run_turn)(conversation, text="Ask the model.", user=user)
    assert outcome.text == "It said Bonjour."
    assert charged() == [("call_llm", conversation.tenant_id, str(user.pk), round(COST, 8))]
    assert UsageLog.objects.get(kind="tool").conversation_id == conversation.pk
    assert outcome.cost_usd == pytest.approx(COST)  # the turn spent it too (its model calls cost nothing)

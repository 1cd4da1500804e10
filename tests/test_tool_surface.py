"""What one model call is offered: floor, working set, modes, capabilities, budget."""

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from conversations.models import Conversation, WorkingSetEntry
from llm.models import ModelConfig
from registry import surface, surface_floor
from registry.models import SeedLog, ToolExecutionLog
from registry.surface import MAX_TOOL_SURFACE, ToolSurfaceBudgetError, compose, page_in
from registry.surface_floor import (
    ANCHORS,
    FLOOR_KEY,
    SYSTEM_TOOL_NAMES,
    compute_scores,
    derive_and_store_tier0,
    derive_tier0,
    resolve_floor_names,
)
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


def log_calls(tool, count, days_ago):
    when = timezone.now() - timedelta(days=days_ago)
    ToolExecutionLog.objects.bulk_create(
        [
            ToolExecutionLog(tool_name=tool, tenant_id=TENANT, success=True, execution_ms=1, created_at=when)
            for _ in range(count)
        ]
    )


def names(entries):
    return [e.name for e in entries]


@pytest.fixture
def conversation():
    return Conversation.objects.create(tenant_id=TENANT)


def test_scores_weigh_calls_by_age():
    log_calls("fresh", 2, days_ago=1)  # 2 × 3.0
    log_calls("aging", 2, days_ago=45)  # 2 × 1.0
    log_calls("stale", 10, days_ago=200)  # 10 × 0.2
    assert compute_scores() == {"fresh": 6.0, "aging": 2.0, "stale": 2.0}


def test_the_floor_puts_anchors_first_then_the_most_used_tools():
    floor = derive_tier0({"popular": 9.0, "used": 3.0, "plan": 50.0}, anchors=("search_tools", "plan"))
    assert floor == [("search_tools", "anchor"), ("plan", "anchor"), ("popular", "usage"), ("used", "usage")]


def test_the_floor_stops_at_its_target_size():
    scores = {f"tool_{n:02}": float(100 - n) for n in range(50)}
    floor = derive_tier0(scores, anchors=("search_tools",), target=30)
    assert len(floor) == 30 and floor[-1] == ("tool_28", "usage")


def test_a_floor_outside_the_expected_size_warns_but_still_derives(caplog):
    floor = derive_tier0({}, anchors=("search_tools",))
    assert floor == [("search_tools", "anchor")]
    assert "outside [25, 35]" in caplog.text
    assert "0 live tool(s) have calls in the execution log so far" in caplog.text  # why: a new install


def test_a_small_floor_says_how_many_live_tools_have_been_used(caplog):
    derive_tier0({"used": 2.0, "retired": 5.0, "never": 0.0}, anchors=("plan",), known={"used", "never"})
    assert "floor has 2 tools, outside [25, 35]: 1 live tool(s) have calls" in caplog.text


def test_only_live_tools_earn_a_usage_slot():
    assert derive_tier0({"retired": 9.0, "live": 1.0}, anchors=(), known={"live"}) == [("live", "usage")]


def test_the_derived_floor_is_stored_and_read_back_with_system_tools_unioned(make_tool):
    make_tool("popular", handlers.echo)
    log_calls("popular", 5, days_ago=1)
    derive_and_store_tier0()
    floor = resolve_floor_names()
    assert floor[: len(ANCHORS) + 1] == [*((n, "anchor") for n in ANCHORS), ("popular", "usage")]
    assert {n for n, r in floor if r == "system"} == set(SYSTEM_TOOL_NAMES) - set(ANCHORS)


def test_without_a_stored_floor_the_static_floor_is_used():
    assert resolve_floor_names()[0] == ("search_tools", "static_fallback")


def test_a_corrupt_stored_floor_falls_back_to_the_static_floor(caplog):
    SeedLog.objects.create(key=FLOOR_KEY, value={"floor": "not a list"})
    assert resolve_floor_names()[0] == ("search_tools", "static_fallback")
    assert "does not parse" in caplog.text


def test_the_floor_is_cached_until_the_cache_expires():
    resolve_floor_names()
    SeedLog.objects.create(key=FLOOR_KEY, value={"floor": [{"name": "plan", "reason": "anchor"}]})
    assert resolve_floor_names()[0] == ("search_tools", "static_fallback")
    surface_floor.clear_floor_cache()
    assert resolve_floor_names()[0] == ("plan", "anchor")


def test_deriving_the_floor_is_scheduled_with_django_q():
    from django_q.models import Schedule

    call_command("seed_tools", verbosity=0)
    assert Schedule.objects.get(name="derive tool floor").func == ("registry.surface_floor.derive_and_store_tier0")


def test_chat_mode_offers_the_floor_without_agentic_only_tools(registry):
    entries = compose(registry, TENANT, mode="chat")
    assert "search_tools" in names(entries) and "plan" not in names(entries)


def test_agentic_mode_offers_the_allowlist_and_never_a_missing_name(registry):
    entries = compose(registry, TENANT, mode="agentic")
    live = registry.definitions()
    assert names(entries) == [name for name in surface.PM_ALLOWED if name in live]
    assert "plan" in names(entries)
    assert {e.reason for e in entries} == {"mode_allowlist"}


def test_delegate_mode_excludes_agentic_only_tools(registry):
    assert "plan" not in names(compose(registry, TENANT, mode="delegate"))


def test_an_unknown_mode_is_refused(registry):
    with pytest.raises(ValueError, match="unknown mode 'chatty'; expected one of chat, agentic, delegate"):
        compose(registry, TENANT, mode="chatty")


def test_a_paged_in_tool_stays_for_later_turns_of_the_conversation(registry, make_tool, conversation, call):
    make_tool("convert_currency", handlers.echo, description="Convert an amount between currencies.")
    result = call("search_tools", context={"conversation_id": conversation.id}, query="convert dollars to euros")
    assert "Now callable in this conversation: convert_currency" in result.content
    for _turn in range(2):
        entries = compose(registry, TENANT, conversation_id=conversation.id)
        assert ("convert_currency", "working_set") in [(e.name, e.reason) for e in entries]
    other = Conversation.objects.create(tenant_id=TENANT)
    assert "convert_currency" not in names(compose(registry, TENANT, conversation_id=other.id))


def test_another_tenants_working_set_tool_is_never_offered(registry, make_tool, conversation):
    make_tool("globex_tool", handlers.echo, tenant_id=OTHER_TENANT)
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="globex_tool")
    assert "globex_tool" not in names(compose(registry, TENANT, conversation_id=conversation.id))


def test_paging_in_stops_at_the_budget_and_reports_what_did_not_fit(registry, make_tool, conversation):
    resident = len(compose(registry, TENANT))
    wanted = [f"tool_{n:03}" for n in range(MAX_TOOL_SURFACE - resident + 2)]
    for name in wanted:
        make_tool(name, handlers.echo)
    result = page_in(registry, TENANT, wanted, conversation_id=conversation.id)
    assert result.over_budget == wanted[-2:]
    assert len(compose(registry, TENANT, conversation_id=conversation.id)) == MAX_TOOL_SURFACE


def test_an_over_budget_surface_raises_rather_than_being_cut(registry, make_tool, conversation):
    for n in range(MAX_TOOL_SURFACE + 1):
        make_tool(f"tool_{n:03}", handlers.echo)
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=f"tool_{n:03}")
    with pytest.raises(ToolSurfaceBudgetError, match="over the budget of 120"):
        compose(registry, TENANT, conversation_id=conversation.id)


@pytest.fixture
def web_search(registry):
    # The seeded system web_search declares replaced_by_model_capability="web_search".
    SeedLog.objects.create(
        key=FLOOR_KEY,
        value={"floor": [{"name": "search_tools", "reason": "anchor"}, {"name": "web_search", "reason": "usage"}]},
    )


def model(provider, **capabilities):
    return ModelConfig(role="chat", provider=provider, model="m", capabilities=capabilities)


def test_a_capability_the_provider_cannot_deliver_removes_nothing(registry, web_search):
    claims = model("anthropic", web_search=True)
    assert "web_search" in names(compose(registry, TENANT, model=claims))


def test_a_capability_both_claimed_and_deliverable_replaces_the_resident_tool(registry, web_search, monkeypatch):
    monkeypatch.setitem(surface.PROVIDER_NATIVE_CAPABILITIES, "openai_responses", frozenset({"web_search"}))
    assert "web_search" not in names(compose(registry, TENANT, model=model("openai_responses", web_search=True)))
    assert "web_search" in names(compose(registry, TENANT, model=model("openai_responses", web_search=False)))


def test_a_tool_the_model_paged_in_is_never_removed_by_a_capability(registry, web_search, monkeypatch, conversation):
    monkeypatch.setitem(surface.PROVIDER_NATIVE_CAPABILITIES, "openai_responses", frozenset({"web_search"}))
    SeedLog.objects.filter(key=FLOOR_KEY).update(value={"floor": [{"name": "search_tools", "reason": "anchor"}]})
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="web_search")
    entries = compose(
        registry, TENANT, conversation_id=conversation.id, model=model("openai_responses", web_search=True)
    )
    assert ("web_search", "working_set") in [(e.name, e.reason) for e in entries]


def test_every_offered_tool_carries_its_reason_for_the_llm_request_event(registry, conversation):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="plan")
    event = surface.surface_event(compose(registry, TENANT, mode="agentic", conversation_id=conversation.id))
    assert {"name": "plan", "reason": "mode_allowlist"} in event["tools"]
    assert {"name": "search_tools", "reason": "mode_allowlist"} in event["tools"]
    assert all(set(tool) == {"name", "reason"} for tool in event["tools"])


def test_the_assembled_array_has_each_tools_schema_with_reasoning(registry):
    tools = surface.assemble_tools(registry, TENANT)
    search = next(t for t in tools if t["name"] == "search_tools")
    assert "reasoning" in search["input_schema"]["required"]


def test_the_tool_surface_command_prints_names_and_reasons(capsys, conversation):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="plan")
    call_command("tool_surface", "--conversation", conversation.id, "--mode", "chat", "--json")
    offered = json.loads(capsys.readouterr().out)
    assert offered[0] == {"name": "search_tools", "reason": "static_fallback"}
    # The data tools of SYSTEM_TOOL_NAMES that exist are always offered.
    assert {"name": "query", "reason": "system"} in offered
    assert {"name": "recall_entities", "reason": "system"} in offered
    call_command("tool_surface", "--conversation", conversation.id, "--mode", "agentic", "--json")
    assert {"name": "plan", "reason": "mode_allowlist"} in json.loads(capsys.readouterr().out)

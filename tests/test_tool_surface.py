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
from registry.surface import (
    MAX_TOOL_SURFACE,
    MODES,
    compose,
    compose_surface,
    page_in,
    surface_event,
    touch_used,
)
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


def offered_in_any_mode(registry, conversation_id=None):
    every = (compose(registry, TENANT, mode=mode, conversation_id=conversation_id) for mode in MODES)
    return len({name for entries in every for name in names(entries)})


def fill_to_the_cap(registry, make_tool, conversation, extra=0):
    """Page in as many tools as fit beside every mode's resident tools (the budget is the
    same whichever mode pages them in), plus ``extra`` more; their names."""
    wanted = [f"tool_{n:03}" for n in range(MAX_TOOL_SURFACE - offered_in_any_mode(registry) + extra)]
    for name in wanted:
        make_tool(name, handlers.echo)
    for name in wanted:  # one at a time, so each has its own use time
        page_in(registry, TENANT, [name], conversation_id=conversation.id)
    return wanted


@pytest.fixture
def floor_of_30(make_tool):
    floor = [f"floor_{n:02}" for n in range(30)]
    for name in floor:
        make_tool(name, handlers.echo)
    SeedLog.objects.create(key=FLOOR_KEY, value={"floor": [{"name": n, "reason": "usage"} for n in floor]})
    return floor


@pytest.mark.parametrize("mode", MODES)
def test_an_agentic_conversation_filled_to_the_cap_fits_in_every_mode(
    registry, make_tool, conversation, floor_of_30, mode
):
    fill_to_the_cap(registry, make_tool, conversation, extra=30)
    surface = compose_surface(registry, TENANT, mode=mode, conversation_id=conversation.id)
    assert len(surface.entries) <= MAX_TOOL_SURFACE
    assert surface.cut == []


def test_paging_in_evicts_the_least_recently_used_tools_first(registry, make_tool, conversation):
    paged = fill_to_the_cap(registry, make_tool, conversation)
    touch_used(conversation.id, "", [paged[0]])  # the model called the oldest one
    make_tool("newcomer_a", handlers.echo)
    make_tool("newcomer_b", handlers.echo)
    result = page_in(registry, TENANT, ["newcomer_a", "newcomer_b"], conversation_id=conversation.id)
    assert result.added == ["newcomer_a", "newcomer_b"]
    assert result.evicted == paged[1:3]
    offered = names(compose(registry, TENANT, conversation_id=conversation.id))
    assert offered_in_any_mode(registry, conversation.id) == MAX_TOOL_SURFACE
    assert paged[0] in offered and "newcomer_b" in offered and paged[1] not in offered


def test_a_tool_found_again_counts_as_used(registry, make_tool, conversation):
    paged = fill_to_the_cap(registry, make_tool, conversation)
    page_in(registry, TENANT, [paged[0]], conversation_id=conversation.id)
    make_tool("newcomer", handlers.echo)
    assert page_in(registry, TENANT, ["newcomer"], conversation_id=conversation.id).evicted == [paged[1]]


def test_only_tools_beyond_an_empty_working_set_are_over_budget(registry, make_tool, conversation):
    wanted = [f"tool_{n:03}" for n in range(MAX_TOOL_SURFACE - offered_in_any_mode(registry) + 2)]
    for name in wanted:
        make_tool(name, handlers.echo)
    result = page_in(registry, TENANT, wanted, conversation_id=conversation.id)
    assert (result.over_budget, result.evicted) == (wanted[-2:], [])
    assert offered_in_any_mode(registry, conversation.id) == MAX_TOOL_SURFACE


def test_the_search_tools_hint_names_the_tools_it_put_away(registry, make_tool, call, conversation):
    paged = fill_to_the_cap(registry, make_tool, conversation)
    make_tool("convert_currency", handlers.echo, description="Convert an amount between currencies.")
    result = call("search_tools", context={"conversation_id": conversation.id}, query="convert dollars to euros")
    assert "Now callable in this conversation: convert_currency" in result.content
    assert f"least recently used tools were put away: {paged[0]}" in result.content


def test_an_over_full_surface_keeps_the_resident_part_and_the_most_recent_tools(
    registry, make_tool, conversation, caplog
):
    resident = names(compose(registry, TENANT))
    stored = [f"tool_{n:03}" for n in range(MAX_TOOL_SURFACE + 1)]
    for name in stored:
        make_tool(name, handlers.echo)
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)
    surface = compose_surface(registry, TENANT, conversation_id=conversation.id)
    assert len(surface.entries) == MAX_TOOL_SURFACE
    assert names(surface.entries)[: len(resident)] == resident
    assert surface.cut == stored[: len(resident) + 1]
    assert names(surface.entries)[-1] == stored[-1]
    assert "over the cap of 120" in caplog.text
    assert surface_event(surface)["tools_cut"] == surface.cut


def test_a_huge_floor_is_cut_to_the_cap_rather_than_raising(registry, make_tool):
    floor = [f"floor_{n:03}" for n in range(MAX_TOOL_SURFACE + 5)]
    for name in floor:
        make_tool(name, handlers.echo)
    SeedLog.objects.create(key=FLOOR_KEY, value={"floor": [{"name": n, "reason": "usage"} for n in floor]})
    surface = compose_surface(registry, TENANT)
    assert len(surface.entries) == MAX_TOOL_SURFACE
    assert len(surface.cut) > 0


@pytest.fixture
def web_search(registry, settings):
    # The seeded system web_search declares replaced_by_model_capability="web_search";
    # it is offered only with a search backend (registry.availability).
    settings.WEB_SEARCH_BACKEND = "tests.knowledge.test_web.fake_backend"
    SeedLog.objects.create(
        key=FLOOR_KEY,
        value={"floor": [{"name": "search_tools", "reason": "anchor"}, {"name": "web_search", "reason": "usage"}]},
    )


def model(provider, **capabilities):
    return ModelConfig(role="chat", provider=provider, model="m", capabilities=capabilities)


def test_a_capability_the_provider_cannot_deliver_removes_nothing(registry, web_search):
    claims = model("anthropic", web_search=True)
    assert "web_search" in names(compose(registry, TENANT, model=claims))


def test_a_capability_both_claimed_and_deliverable_replaces_the_resident_tool(registry, web_search):
    assert "web_search" not in names(compose(registry, TENANT, model=model("openai_responses", web_search=True)))
    assert "web_search" in names(compose(registry, TENANT, model=model("openai_responses", web_search=False)))


def test_a_tool_the_model_paged_in_is_never_removed_by_a_capability(registry, web_search, conversation):
    SeedLog.objects.filter(key=FLOOR_KEY).update(value={"floor": [{"name": "search_tools", "reason": "anchor"}]})
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="web_search")
    entries = compose(
        registry, TENANT, conversation_id=conversation.id, model=model("openai_responses", web_search=True)
    )
    assert ("web_search", "working_set") in [(e.name, e.reason) for e in entries]


def test_every_offered_tool_carries_its_reason_for_the_llm_request_event(registry, conversation):
    WorkingSetEntry.objects.create(conversation=conversation, tool_name="plan")
    event = surface.surface_event(compose_surface(registry, TENANT, mode="agentic", conversation_id=conversation.id))
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

import pytest

from registry.models import ToolStatus
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


def names(registry, tenant=TENANT):
    return {tool["name"] for tool in registry.get_tools_for_llm(tenant)}


def test_approved_enabled_tools_of_the_tenant_and_everyone_are_offered(registry, make_tool):
    make_tool("shared_tool", handlers.echo)
    make_tool("acme_tool", handlers.echo, tenant_id=TENANT)
    assert {"shared_tool", "acme_tool", "search_tools", "plan"} <= names(registry)


def test_a_tenant_never_sees_another_tenants_tools(registry, make_tool):
    make_tool("globex_tool", handlers.echo, tenant_id=OTHER_TENANT)
    assert "globex_tool" not in names(registry, TENANT)
    assert "globex_tool" in names(registry, OTHER_TENANT)


@pytest.mark.parametrize(
    "fields",
    [
        {"status": ToolStatus.DRAFT},
        {"status": ToolStatus.TESTING},
        {"status": ToolStatus.REJECTED},
        {"enabled": False},
        {"category": "internal"},
    ],
    ids=["draft", "testing", "rejected", "disabled", "internal"],
)
def test_tools_that_are_not_approved_enabled_and_public_are_not_offered(registry, make_tool, fields):
    make_tool("hidden", handlers.echo, **fields)
    assert "hidden" not in names(registry)


def test_a_soft_deleted_tool_is_not_offered(registry, make_tool):
    from django.utils import timezone

    make_tool("gone", handlers.echo, deleted_at=timezone.now())
    assert "gone" not in names(registry)


def test_an_internal_tool_is_hidden_but_still_callable(call, make_tool):
    make_tool("helper", handlers.echo, category="internal")
    assert call("helper").error is None


def test_every_schema_but_plans_requires_a_reasoning_field(registry):
    tools = {tool["name"]: tool for tool in registry.get_tools_for_llm(TENANT)}
    search = tools["search_tools"]["input_schema"]
    assert "reasoning" in search["required"]
    assert search["properties"]["reasoning"]["type"] == "string"
    assert "reasoning" not in tools["plan"]["input_schema"].get("properties", {})


def test_injecting_reasoning_leaves_the_stored_schema_alone(registry):
    from registry.models import ToolDefinition

    registry.get_tools_for_llm(TENANT)
    stored = ToolDefinition.objects.get(name="search_tools").input_schema
    assert "reasoning" not in stored["properties"]


def test_the_visible_to_queryset_matches_what_the_model_is_offered(registry, make_tool):
    from registry.models import ToolDefinition

    make_tool("acme_tool", handlers.echo, tenant_id=TENANT)
    make_tool("globex_tool", handlers.echo, tenant_id=OTHER_TENANT)
    make_tool("helper", handlers.echo, category="internal")
    queried = set(ToolDefinition.objects.visible_to(TENANT).values_list("name", flat=True))
    # Less what cannot work here (registry.availability): the tests configure no web search backend,
    # custom tools are off (nothing may build or run sandboxed code), and the tenant has no skill
    # or primitive for those tools to act on.
    waiting = {"use_skill", "read_skill_asset", "run_skill_script", "update_skill", "validate_primitive"}
    sandboxed = {"build_custom_tool", "create_primitive", "call_primitive"}
    assert queried - {"web_search", *sandboxed, *waiting} == names(registry)


def test_schema_properties_reach_the_model_in_the_order_they_were_written(registry, make_tool):
    schema = {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}, "mid": {}}}
    make_tool("ordered", handlers.echo, input_schema=schema)
    offered = {t["name"]: t for t in registry.get_tools_for_llm(TENANT)}["ordered"]["input_schema"]
    assert list(offered["properties"]) == ["zeta", "alpha", "mid", "reasoning"]

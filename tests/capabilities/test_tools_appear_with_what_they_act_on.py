"""The skill and primitive tools are offered to a workspace only once it has something for
them to act on: the surface leaves them off, search_tools does not find them, and a call
of one anyway is a Hint saying what to make first. create_skill and create_primitive are
always offered; another tenant's skills and primitives never count."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.surface import compose
from tests.capabilities.conftest import FOLDER
from tests.conftest import OTHER_TENANT, TENANT, text
from tools import capability_actions as actions
from tools import holdings
from tools.models import Primitive, Skill
from tools.utility import find_tools

# Custom tools on: the primitive tools and run_skill_script run code, and are offered only then.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("custom_tools_on")]

SKILL_TOOLS = ("use_skill", "read_skill_asset", "run_skill_script")
ACTING_TOOLS = (*SKILL_TOOLS, "update_skill", "validate_primitive", "call_primitive")
LOAD_A_SKILL = "load an approved Agent Skill playbook and follow its instructions"
CELSIUS = {
    "name": "celsius_to_fahrenheit",
    "description": "Convert a temperature from degrees Celsius to degrees Fahrenheit.",
    "input_schema": {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]},
    "output_schema": {"type": "number"},
    "examples": [{"input": {"celsius": 100}, "output": 212}],
    "code": "result = inputs['celsius'] * 9 / 5 + 32",
}


def offered(registry, tenant: str = TENANT) -> set[str]:
    """What one model call of ``tenant`` is offered, with every capability tool paged in."""
    paged_in = [*ACTING_TOOLS, "create_skill", "create_primitive"]
    return {entry.name for entry in compose(registry, tenant, working_set=paged_in)}


def found(registry, query: str = LOAD_A_SKILL, tenant: str = TENANT) -> set[str]:
    return {definition.name for definition, _ in find_tools(registry, query, tenant, 10)}


def pending_primitive(tenant: str = TENANT) -> Primitive:
    definition = {key: value for key, value in CELSIUS.items() if key != "code"}
    return actions.create_primitive(tenant_id=tenant, actor="user:u1", code=CELSIUS["code"], **definition)


def test_a_workspace_with_nothing_to_act_on_is_offered_only_the_tools_that_make_it(registry):
    surface = offered(registry)
    assert not surface & set(ACTING_TOOLS)
    assert {"create_skill", "create_primitive"} <= surface
    assert not found(registry) & set(SKILL_TOOLS)
    assert "create_skill" in found(registry, "save a reusable Agent Skill playbook for later conversations")
    assert not {d["name"] for d in registry.get_tools_for_llm(TENANT)} & set(ACTING_TOOLS)


def test_a_workspace_with_an_approved_skill_is_offered_the_skill_tools(registry, approved_skill):
    approved_skill()
    surface = offered(registry)
    assert set(SKILL_TOOLS) | {"update_skill"} <= surface
    assert "use_skill" in found(registry)
    assert not surface & {"validate_primitive", "call_primitive"}


def test_another_tenants_skill_does_not_count(registry, approved_skill, tool):
    approved_skill(tenant=OTHER_TENANT)
    assert not offered(registry) & set(ACTING_TOOLS)
    assert "use_skill" not in found(registry)
    assert "\n- use_skill: " not in tool("search_tools", {"query": LOAD_A_SKILL}).content
    assert "\n- use_skill: " in tool("search_tools", {"query": LOAD_A_SKILL}, tenant=OTHER_TENANT).content
    assert "use_skill" in offered(registry, OTHER_TENANT) and "use_skill" in found(registry, tenant=OTHER_TENANT)


def test_a_skill_waiting_for_review_can_be_updated_but_not_used(registry, tool):
    tool("create_skill", {"name": "standup-notes", "description": "Weekly notes.", "instructions": "Write them."})
    surface = offered(registry)
    assert "update_skill" in surface
    assert not surface & set(SKILL_TOOLS)


def test_approving_a_skill_offers_use_skill_at_once_and_deleting_the_last_one_hides_it(registry, reviewer, tool):
    skill = actions.create_skill(tenant_id=TENANT, folder=FOLDER, actor="user:u1")
    assert "use_skill" not in offered(registry) and "use_skill" not in found(registry)

    actions.approve(skill, acting_user=reviewer)
    assert "use_skill" in offered(registry) and "use_skill" in found(registry)
    assert text(tool("use_skill", {"name": "regional-sales-summary"})).startswith("# Skill regional-sales-summary")

    Skill.objects.get(pk=skill.pk).delete()
    assert not offered(registry) & {*SKILL_TOOLS, "update_skill"}
    assert "use_skill" not in found(registry)


def test_calling_a_hidden_skill_tool_is_a_hint_saying_what_to_make_first(tool):
    result = tool("use_skill", {"name": "regional-sales-summary"})
    assert result.error is None  # a correction the model acts on, not a failure
    assert result.content.startswith(
        "⚠ schema hint: use_skill is unavailable here: this workspace has no approved skill yet; "
        "create one with create_skill"
    )
    assert "Traceback" not in result.content
    updated = tool("update_skill", {"name": "regional-sales-summary", "description": "Totals."})
    assert "this workspace has no skill to update yet; create one with create_skill" in updated.content


def test_the_primitive_tools_follow_the_workspaces_primitives(registry, reviewer, tool, custom_tools_on):
    hidden = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 0}})
    assert hidden.error is None
    assert "this workspace has no approved primitive yet; create one with create_primitive" in hidden.content

    primitive = pending_primitive()
    tool("validate_primitive", {"name": "celsius_to_fahrenheit"}, staff=True)  # its examples pass
    surface = offered(registry)
    assert "validate_primitive" in surface and "call_primitive" not in surface
    assert "call_primitive" not in offered(registry, OTHER_TENANT)

    actions.approve(Primitive.objects.get(pk=primitive.pk), acting_user=reviewer)
    assert "call_primitive" in offered(registry)
    called = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 100}})
    assert json.loads(text(called)) == 212


def test_the_checks_of_one_tenant_cost_one_query_then_none(registry, approved_skill):
    approved_skill()
    holdings.forget()
    with CaptureQueriesContext(connection) as first:
        answers = [check(TENANT) for check in (holdings.usable_skill, holdings.any_skill, holdings.usable_primitive)]
        answers.append(holdings.any_primitive(TENANT))
    with CaptureQueriesContext(connection) as again:
        offered(registry)
    assert answers[:2] == [None, None] and answers[2] is not None and answers[3] is not None
    assert len(first.captured_queries) == 1
    assert not [q for q in again.captured_queries if '"skills"' in q["sql"] or '"primitives"' in q["sql"]]

"""An approved primitive is called by name: by the model, from a skill's script, from a custom tool."""

from __future__ import annotations

import json

import pytest

from tests.capabilities.conftest import FOLDER, ROWS
from tests.capabilities.test_primitives import CELSIUS
from tests.conftest import OTHER_TENANT, TENANT, text
from tools import capability_actions as actions
from tools.lib.skill_format import MANIFEST, SkillFolder
from tools.models import Primitive

pytestmark = pytest.mark.django_db(transaction=True)

TOTALS = {
    "name": "units_by_region",
    "description": "Add up units per region.",
    "input_schema": {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "object"}}},
        "required": ["rows"],
    },
    "output_schema": {"type": "object", "additionalProperties": {"type": "integer"}},
    "examples": [{"input": {"rows": [{"region": "north", "units": 2}]}, "output": {"north": 2}}],
    "code": (
        "totals = {}\n"
        "for row in inputs['rows']:\n"
        "    totals[row['region']] = totals.get(row['region'], 0) + row['units']\n"
        "result = totals\n"
    ),
}


@pytest.fixture
def approved_primitive(reviewer):
    def make(definition: dict, tenant: str = TENANT) -> Primitive:
        primitive = actions.create_primitive(tenant_id=tenant, actor="test", **definition)
        # Approved over an override: these tests are about calling it, not validating it.
        return (
            actions.approve(primitive, acting_user=reviewer, override="validated elsewhere")
            if tenant == TENANT
            else primitive
        )

    return make


def test_the_model_calls_an_approved_primitive_and_reads_json(approved_primitive, tool, custom_tools_on):
    approved_primitive(CELSIUS)
    called = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 20}})
    assert json.loads(text(called)) == 68


def test_inputs_that_break_the_schema_are_a_hint_naming_the_field(approved_primitive, tool, custom_tools_on):
    approved_primitive(CELSIUS)
    hint = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": "warm"}})
    assert hint.content.startswith("⚠ schema hint: inputs: the input breaks the input schema at celsius:")


def test_a_primitive_not_approved_as_it_is_is_not_run(approved_primitive, tool, custom_tools_on):
    approved_primitive(CELSIUS)
    Primitive.objects.filter(name="celsius_to_fahrenheit").update(code="result = 0")
    refused = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 20}})
    assert refused.content.startswith("⚠ schema hint: name: primitive 'celsius_to_fahrenheit' is not approved")


def test_another_tenants_primitive_is_not_found(approved_primitive, tool, custom_tools_on):
    approved_primitive(CELSIUS, tenant=OTHER_TENANT)
    hidden = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 20}})
    assert "call_primitive is unavailable here: this workspace has no approved primitive yet" in hidden.content
    approved_primitive({**CELSIUS, "name": "celsius_to_kelvin"})
    missing = tool("call_primitive", {"name": "celsius_to_fahrenheit", "inputs": {"celsius": 20}})
    assert missing.content.startswith("⚠ fetch hint: name: no primitive named 'celsius_to_fahrenheit' here")


def test_a_skill_script_calls_a_primitive_it_allows(approved_primitive, approved_skill, tool, custom_tools_on):
    approved_primitive(TOTALS)
    manifest = FOLDER.files[MANIFEST].replace(b"allowed-tools: preview_data", b"allowed-tools: call_primitive")
    script = b"result = call_tool('call_primitive', {'name': 'units_by_region', 'inputs': {'rows': inputs['rows']}})"
    approved_skill(SkillFolder({**FOLDER.files, MANIFEST: manifest, "scripts/summarise.py": script}))
    ran = tool(
        "run_skill_script", {"name": "regional-sales-summary", "script": "scripts/summarise.py", "args": {"rows": ROWS}}
    )
    assert json.loads(text(ran).strip().splitlines()[-1]) == {"north": 17, "south": 4, "east": 3}


def test_a_custom_tool_calls_a_primitive_it_declares(approved_primitive, tool, custom_tools_on):
    from registry.custom_tools import approve_custom_tool, register_custom_tool
    from tests.sandbox.conftest import make_reviewer

    approved_primitive(CELSIUS)
    code = (
        "result = 'boiling is ' + "
        "call_tool('call_primitive', {'name': 'celsius_to_fahrenheit', 'inputs': {'celsius': 100}})"
    )
    custom = register_custom_tool(
        name="boiling_point",
        code=code,
        description="Water's boiling point in Fahrenheit.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=TENANT,
        dependencies=["call_primitive"],
    )
    approve_custom_tool(custom, acting_user=make_reviewer("tool-reviewer"), override_reason="calls a primitive")
    said = text(tool("boiling_point"))
    assert "boiling is " in said and "212" in said

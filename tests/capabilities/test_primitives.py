"""Primitives through execute_tool: typed functions checked on their examples, approved by hash."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.conftest import OTHER_TENANT, text
from tools import capability_actions as actions
from tools.models import CapabilityStatus, Primitive

pytestmark = pytest.mark.django_db(transaction=True)

CELSIUS = {
    "name": "celsius_to_fahrenheit",
    "description": "Convert a temperature from degrees Celsius to degrees Fahrenheit.",
    "input_schema": {
        "type": "object",
        "properties": {"celsius": {"type": "number"}},
        "required": ["celsius"],
        "additionalProperties": False,
    },
    "output_schema": {"type": "number"},
    "examples": [
        {"input": {"celsius": 100}, "output": 212},
        {"input": {"celsius": -40}, "output": -40},
        {"input": {"celsius": 37}, "output": 98.6},
    ],
    "code": "result = inputs['celsius'] * 9 / 5 + 32",
}


def test_a_primitive_is_run_on_every_example_and_waits_for_review(tool, custom_tools_on):
    made = text(tool("create_primitive", CELSIUS, staff=True))
    assert made.startswith("Primitive celsius_to_fahrenheit: 3 of 3 example(s) pass.")
    primitive = Primitive.objects.get(name="celsius_to_fahrenheit")
    assert primitive.status == CapabilityStatus.PENDING and actions.validation_passed(primitive)
    assert [result["got"] for result in primitive.validation["results"]] == [212, -40, pytest.approx(98.6)]


def test_a_wrong_example_is_reported_with_what_came_back(tool, custom_tools_on):
    wrong = {**CELSIUS, "code": "result = inputs['celsius'] * 2 + 30"}
    report = text(tool("create_primitive", wrong, staff=True))
    assert report.startswith("Primitive celsius_to_fahrenheit: 0 of 3 example(s) pass.")
    assert '- example 1 {"celsius": 100}: expected 212, got 230' in report
    assert not actions.validation_passed(Primitive.objects.get())


def test_an_output_that_breaks_the_output_schema_is_named(tool, custom_tools_on):
    text_out = {**CELSIUS, "code": "result = str(inputs['celsius'])"}
    report = text(tool("create_primitive", text_out, staff=True))
    assert "the output breaks the output schema at (top): '100' is not of type 'number'" in report


def test_code_that_breaks_the_language_policy_fails_its_examples_without_a_traceback(tool, custom_tools_on):
    hostile = {**CELSIUS, "code": "result = ().__class__.__base__.__subclasses__()"}
    report = text(tool("create_primitive", hostile, staff=True))
    assert "0 of 3 example(s) pass" in report and "[stopped by: language]" in report
    assert "Traceback" not in report


def test_a_bad_schema_or_example_is_a_hint_naming_the_field(tool, custom_tools_on):
    bad = {**CELSIUS, "input_schema": {"type": "array"}, "examples": [{"input": {"celsius": 1}}]}
    hint = tool("create_primitive", bad, staff=True)
    assert hint.content.startswith("⚠ schema hint")
    assert "examples" in hint.content
    taken = tool("create_primitive", CELSIUS, staff=True)
    retaken = tool("create_primitive", CELSIUS, staff=True)
    assert (
        taken.content.startswith("✓") and "a primitive named 'celsius_to_fahrenheit' already exists" in retaken.content
    )


def test_only_staff_make_or_validate_primitives_and_only_with_custom_tools_on(tool, settings):
    off = tool("create_primitive", CELSIUS, staff=True)
    assert off.content.startswith("⚠ schema hint: create_primitive is unavailable here")
    assert "EUNICE_CUSTOM_TOOLS" in off.content
    settings.FEATURE_FLAGS = {**settings.FEATURE_FLAGS, "custom_tools_enabled": True}
    refused = tool("create_primitive", CELSIUS)
    assert refused.content.startswith("✗") and "tools.add_primitive" in refused.content
    assert not Primitive.objects.exists()
    tool("create_primitive", CELSIUS, staff=True)
    assert "tools.add_primitive" in tool("validate_primitive", {"name": "celsius_to_fahrenheit"}).content


def test_validate_primitive_reruns_the_examples_and_tries_extra_ones(tool, custom_tools_on):
    tool("create_primitive", CELSIUS, staff=True)
    checked = text(
        tool(
            "validate_primitive",
            {"name": "celsius_to_fahrenheit", "extra_examples": [{"input": {"celsius": 0}, "output": 33}]},
            staff=True,
        )
    )
    assert checked.startswith("Primitive celsius_to_fahrenheit: 3 of 3 example(s) pass.")
    assert 'Extra examples (not stored):\n- {"celsius": 0}: got 32' in checked


def test_another_tenants_primitive_is_not_found(tool, custom_tools_on):
    tool("create_primitive", CELSIUS, staff=True, tenant=OTHER_TENANT)
    hidden = tool("validate_primitive", {"name": "celsius_to_fahrenheit"}, staff=True)
    assert "validate_primitive is unavailable here: this workspace has no primitive yet" in hidden.content
    tool("create_primitive", {**CELSIUS, "name": "celsius_to_kelvin"}, staff=True)
    missing = tool("validate_primitive", {"name": "celsius_to_fahrenheit"}, staff=True)
    assert missing.content.startswith("⚠ fetch hint: name: no primitive named 'celsius_to_fahrenheit' here")


def test_approval_needs_a_passed_validation_of_the_current_code_or_an_override(tool, custom_tools_on, reviewer):
    tool("create_primitive", CELSIUS, staff=True)
    primitive = Primitive.objects.get()
    Primitive.objects.filter(pk=primitive.pk).update(code="result = 0")
    changed = Primitive.objects.get()
    assert not actions.validation_passed(changed)
    with pytest.raises(ValidationError, match="has not passed validation"):
        actions.approve(changed, acting_user=reviewer)
    approved = actions.approve(changed, acting_user=reviewer, override="a placeholder the team asked for")
    assert approved.is_usable() and approved.approved_hash == changed.compute_hash()

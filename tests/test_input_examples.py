"""Input examples on tool definitions: checked against the schema when declared, shown to
the model only for tools whose inputs are nested or many, and counted in the surface."""

from __future__ import annotations

import json

import pytest

from registry.contract import Ok
from registry.declarations import DeclarationError, Tool
from registry.snapshot import llm_schema, shows_examples
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db

FLAT = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
NESTED = {
    "type": "object",
    "properties": {"stops": {"type": "array", "items": {"type": "object", "properties": {"at": {"type": "string"}}}}},
}


def handle(inputs, context):
    return Ok(rows=0)


def test_an_example_that_does_not_fit_the_schema_is_refused_naming_the_tool():
    refused = "tool 'weather': input example 2 is not valid: city: this field is required"
    with pytest.raises(DeclarationError, match=refused):
        Tool(
            name="weather",
            description="d",
            input_schema=FLAT,
            handler=handle,
            category="c",
            input_examples=({"city": "Oslo"}, {"town": "Bergen"}),
        )


def test_a_declared_example_travels_in_the_schema_as_its_examples():
    tool = Tool(
        name="route",
        description="d",
        input_schema=NESTED,
        handler=handle,
        category="c",
        input_examples=({"stops": [{"at": "Oslo"}]},),
    )
    assert tool.entry()["input_schema"]["examples"] == [{"stops": [{"at": "Oslo"}]}]


def test_the_model_sees_examples_for_nested_or_many_inputs_and_not_for_a_few_flat_ones():
    many = {"type": "object", "properties": {name: {"type": "string"} for name in "abcde"}}
    assert shows_examples(NESTED) and shows_examples(many)
    assert not shows_examples(FLAT)
    assert "examples" not in llm_schema("weather", {**FLAT, "examples": [{"city": "Oslo"}]})
    assert llm_schema("route", {**NESTED, "examples": [{"stops": []}]})["examples"] == [{"stops": []}]


def test_the_offered_catalog_carries_the_examples_and_counts_their_tokens(registry):
    offered = {tool["name"]: tool for tool in registry.get_tools_for_llm(TENANT)}
    examples = offered["search_catalog"]["input_schema"]["examples"]
    assert {"query": "monthly revenue by region", "kinds": ["dataset"], "limit": 3} in examples
    assert "examples" in offered["create_chart"]["input_schema"]  # eight flat parameters
    assert json.dumps(examples) in json.dumps(list(offered.values()))  # what bench/surface.py measures

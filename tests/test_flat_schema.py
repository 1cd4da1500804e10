"""A flat schema's quick yes never says yes where the general validator says no.

``registry.flat_schema.acceptor`` only ever accepts; every refusal, and its
message, stays the general validator's. These tests hold it to that over many
generated schemas and inputs, comparing with fastjsonschema itself.
"""

from __future__ import annotations

import math
import random
from decimal import Decimal
from typing import Any

import fastjsonschema
import pytest

from registry.flat_schema import acceptor
from registry.validation import Compiled, InputError, _compile

ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
SEARCH = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 20, "description": "what to find"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        "order": {"type": "string", "enum": ["asc", "desc"], "default": "asc"},
        "score": {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "exact": {"type": "boolean", "default": False},
    },
    "required": ["query"],
    "additionalProperties": False,
}


class _Text(str):
    pass


class _Count(int):
    pass


def _general(schema: dict) -> Compiled:
    """The general validator alone, without the quick yes."""
    compiled = _compile(schema)
    return Compiled(compiled.check, compiled.invalid, compiled.explain)


def _verdict(validate: Compiled, data: dict) -> tuple[str, dict]:
    """What validating a copy of ``data`` says (its InputError's message, or "ok") and leaves."""
    given = dict(data)
    try:
        validate(given)
    except InputError as exc:
        return f"{exc} | {exc.field} | {exc.rule} | {exc.expected!r}", given
    return "ok", given


def test_a_flat_schema_of_scalar_fields_gets_a_quick_yes() -> None:
    assert acceptor(ADD) is not None
    assert acceptor(SEARCH) is not None


@pytest.mark.parametrize(
    "schema",
    [
        {**ADD, "additionalProperties": True},
        {key: value for key, value in ADD.items() if key != "additionalProperties"},
        {**ADD, "$schema": "http://json-schema.org/draft-04/schema#"},
        {**ADD, "minProperties": 1},
        {**ADD, "properties": {"a": {"type": "array", "items": {"type": "integer"}}}},
        {**ADD, "properties": {"a": {"type": "object"}}},
        {**ADD, "properties": {"a": {"description": "any value at all"}}},
        {**ADD, "properties": {"a": {"type": "string", "pattern": "^x"}}},
        {**ADD, "properties": {"a": {"type": "string", "default": []}}},
        {**ADD, "properties": {"a": {"type": "integer", "enum": [1, 2]}}},
        {**ADD, "properties": {"a": {"type": "integer", "exclusiveMinimum": True}}},
        {**ADD, "properties": {"a": {"type": "integer", "minimum": "1"}}},
        {**ADD, "properties": {"a": {"type": "string", "minLength": -1}}},
        {**ADD, "properties": {"a": {"type": "string", "maxLength": None}}},
        {**ADD, "properties": {"a": {"type": "number", "maximum": None}}},
        {**ADD, "properties": {"a": {"type": "integr"}}},
        {**ADD, "properties": {"a": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}},
    ],
)
def test_any_other_schema_gets_no_quick_yes(schema: dict) -> None:
    assert acceptor(schema) is None


def test_what_is_not_an_object_gets_no_quick_yes() -> None:
    assert acceptor(ADD)([("a", 2), ("b", 3)]) is False  # type: ignore[arg-type]


def test_a_schema_fastjsonschema_cannot_compile_gets_no_quick_yes() -> None:
    impossible = {**ADD, "required": ["a", "b", "c"]}  # c is required, yet not an accepted field
    assert _compile(impossible).accepts is None


def test_the_quick_yes_fills_in_defaults_in_the_schemas_order_like_the_general_validator() -> None:
    quick, general = {"exact": True, "query": "tea"}, {"exact": True, "query": "tea"}
    assert acceptor(SEARCH)(quick) is True
    fastjsonschema.compile(SEARCH)(general)
    filled = [("exact", True), ("query", "tea"), ("limit", 10), ("order", "asc")]
    assert list(quick.items()) == list(general.items()) == filled


def test_inputs_the_quick_yes_does_not_accept_are_left_as_they_were() -> None:
    data = {"query": "", "order": "up"}
    assert acceptor(SEARCH)(data) is False
    assert data == {"query": "", "order": "up"}


@pytest.mark.parametrize(
    "data",
    [
        {"a": 2.0, "b": 3},  # an integral float is an integer
        {"a": _Count(2), "b": 3},  # a subclass of int
    ],
)
def test_inputs_only_the_general_validator_accepts_are_still_accepted(data: dict) -> None:
    assert acceptor(ADD)(dict(data)) is False
    assert _verdict(_compile(ADD), data) == _verdict(_general(ADD), data) == ("ok", data)


def test_a_refusal_is_the_general_validators_word_for_word() -> None:
    for data in ({"a": "2", "b": 3}, {"a": 2}, {"a": 2, "b": 3, "c": 4}, {"a": True, "b": 3}):
        verdict = _verdict(_compile(ADD), data)
        assert verdict[0] != "ok"
        assert verdict == _verdict(_general(ADD), data)


# --- through the one dispatch path ----------------------------------------------------


def _seen(inputs: dict, context: object) -> str:
    return repr(list(inputs.items()))


@pytest.mark.django_db
def test_a_flat_tools_handler_gets_its_defaults_filled_in(call, make_tool) -> None:
    make_tool("find", _seen, input_schema=SEARCH)
    assert call("find", query="tea").content.endswith(
        "[('query', 'tea'), ('limit', 10), ('order', 'asc'), ('exact', False)]"
    )


@pytest.mark.django_db
def test_a_flat_tool_refuses_bad_input_with_the_general_validators_hint(call, make_tool) -> None:
    make_tool("find", _seen, input_schema=SEARCH)
    result = call("find", query="tea", limit=51)
    assert result.content.startswith(
        "⚠ schema hint: invalid input for find: limit: must be smaller than or equal to 50 (rule: maximum)"
    )


@pytest.mark.django_db
def test_a_flat_tool_still_refuses_inputs_nested_too_deep(call, make_tool) -> None:
    make_tool("find", _seen, input_schema=SEARCH)
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    result = call("find", query=deep)
    assert result.content.startswith("⚠ schema hint: invalid input for find: the input is nested deeper than")


# --- the property: over generated schemas and inputs, the same verdicts ----------------

_FIELDS: list[dict[str, Any]] = [
    {"type": "integer"},
    {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
    {"type": "number", "minimum": -1.5, "exclusiveMaximum": 100},
    {"type": "number", "exclusiveMinimum": 0},
    {"type": "string"},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"type": "string", "enum": ["red", "green", "1"], "default": "red"},
    {"type": "string", "format": "date", "description": "formats are off"},
    {"type": "boolean", "default": True},
    {"type": "null"},
    {"type": ["string", "null"], "maxLength": 3},
    {"type": ["integer", "boolean"], "maximum": 0},
    {"type": ["number", "string"], "minimum": 0, "minLength": 1},
]
_VALUES: list[Any] = [
    0, 1, -1, 7, 10, 50, 51, 10**30, True, False, None,
    0.0, 0.5, 1.0, 2.0, -1.5, 99.9, 100.0, math.nan, math.inf, -math.inf,
    "", "a", "ab", "red", "green", "blue", "1", "hello", "héllo", "x" * 6,
    Decimal("3"), Decimal("0.5"), _Text("red"), _Count(3),
    [], [1], {}, {"a": 1}, (1, 2), {"deep": [[{"x": [1]}]]},
]  # fmt: skip
_NAMES = ["a", "b", "c", "limit", "name"]


def _random_schema(rng: random.Random) -> dict:
    names = rng.sample(_NAMES, rng.randint(0, 4))
    properties = {name: dict(rng.choice(_FIELDS)) for name in names}
    required = [name for name in names if rng.random() < 0.5]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _random_inputs(rng: random.Random, schema: dict) -> dict:
    names = list(schema["properties"]) + ["extra"] * (rng.random() < 0.15)
    return {name: rng.choice(_VALUES) for name in names if rng.random() < 0.8}


def test_the_quick_yes_and_the_general_validator_agree_on_generated_schemas_and_inputs() -> None:
    rng = random.Random(40)
    accepted = 0
    for _ in range(400):
        schema = _random_schema(rng)
        quick_yes = acceptor(schema)
        assert quick_yes is not None, schema
        with_it, without_it, reference = (
            _compile(schema),
            _general(schema),
            fastjsonschema.compile(schema, use_formats=False),  # as registry.validation compiles it
        )
        for _ in range(40):
            data = _random_inputs(rng, schema)
            quick = dict(data)
            if quick_yes(quick):
                accepted += 1
                expected = dict(data)
                reference(expected)  # raises if the quick yes was wrong
                assert list(quick.items()) == list(expected.items()), (schema, data)
            else:
                assert quick == data  # nothing filled in on the way to the general validator
            assert _verdict(with_it, data) == _verdict(without_it, data), (schema, data)
    assert accepted > 1000  # the generated inputs do exercise the quick yes

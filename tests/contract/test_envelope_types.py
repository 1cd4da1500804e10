"""The envelope types refuse malformed hints and specs where they are built."""

from __future__ import annotations

import dataclasses

import pytest

from registry.contract import Effects, Hint, HintException, Ok, ToolSpec, Warning
from registry.contract_types import text_ok


def _handler(inputs: dict, context: dict) -> str:
    return ""


def test_hint_with_unknown_kind_raises_value_error_naming_valid_kinds() -> None:
    with pytest.raises(ValueError, match="ambiguous, fetch, schema"):
        Hint("typo", "unknown column")


def test_hint_exception_validates_its_kind_where_it_is_raised() -> None:
    with pytest.raises(ValueError, match="valid kinds"):
        HintException("did_you_mean", "unknown column")


def test_alternatives_are_ranked_by_descending_score() -> None:
    hint = Hint(
        "schema",
        "unknown",
        [{"label": "b", "score": 0.2}, {"label": "a", "score": 0.9}, {"label": "c", "score": 0.2}],
    )
    assert [alternative["label"] for alternative in hint.alternatives] == ["a", "b", "c"]


@pytest.mark.parametrize(
    "alternative",
    [{"score": 0.5}, {"label": "x"}, {"label": "x", "score": "high"}, {"label": "x", "score": True}],
)
def test_alternative_without_label_or_numeric_score_is_refused(alternative: dict) -> None:
    with pytest.raises(ValueError, match="alternative #1"):
        Hint("schema", "unknown", [alternative])


def test_alternatives_keep_extra_keys() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    hint = Hint("schema", "unknown tool", [{"label": "search", "score": 1, "input_schema": schema, "tool": "search"}])
    assert hint.alternatives[0]["input_schema"] == schema
    assert hint.alternatives[0]["tool"] == "search"


def test_hint_does_not_share_the_callers_alternative_dicts() -> None:
    alternative = {"label": "a", "score": 1.0}
    hint = Hint("schema", "unknown", [alternative])
    hint.alternatives[0]["label"] = "changed"
    assert alternative["label"] == "a"


def test_add_and_narrow_belong_only_to_fetch_hints() -> None:
    assert Hint("fetch", "needs a filter", add="date >= 2024-01-01").add == "date >= 2024-01-01"
    with pytest.raises(ValueError, match="fetch hints"):
        Hint("schema", "unknown", narrow="fewer columns")


def test_hint_exception_carries_a_ready_hint() -> None:
    exc = HintException("fetch", "too many rows", [{"label": "limit 100", "score": 0.5}], narrow="limit to 100")
    assert (exc.hint_kind, exc.message, exc.hint.narrow) == ("fetch", "too many rows", "limit to 100")
    assert str(exc) == "too many rows"


def test_tool_spec_refuses_unknown_envelope_kinds() -> None:
    with pytest.raises(ValueError, match="err, hint, ok"):
        ToolSpec("t", _handler, is_tabular=False, expected_envelopes=frozenset({"ok", "warning"}))


def test_tool_spec_refuses_an_empty_set_of_envelope_kinds() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        ToolSpec("t", _handler, is_tabular=False, expected_envelopes=frozenset())


@pytest.mark.parametrize("text", ["5", ""])
def test_a_text_ok_is_the_ok_its_class_makes_of_the_text(text: str) -> None:
    made, called = text_ok(text), Ok(1 if text else 0, [], text)
    for field in dataclasses.fields(Ok):
        if field.name != "effects":
            assert getattr(made, field.name) == getattr(called, field.name)
    for field in dataclasses.fields(Effects):
        assert getattr(made.effects, field.name) == getattr(called.effects, field.name)
    assert type(made) is Ok and type(made.effects) is Effects


def test_text_oks_share_no_container() -> None:
    first, second = text_ok("a"), text_ok("b")
    first.warnings.append(Warning("info", "kept"))
    first.effects.cards.append({"type": "chart"})
    first.effects.datasets["t"] = 1
    assert second.warnings == [] and second.effects.cards == [] and second.effects.datasets == {}
    assert first.schema is not second.schema and first.effects.exports is not second.effects.exports

"""Contract problems are reported in band and never cost the model its result."""

from __future__ import annotations

from registry.contract import Err, Hint, Ok, ToolSpec, uniform_contract, validate_envelope, wrap_for_dispatch
from registry.result import ToolResult

from . import call, fresh_name


def _text(inputs: dict, context: dict) -> ToolResult:
    return ToolResult(content="rendered report")


def _records(inputs: dict, context: dict) -> list[dict]:
    return [{"id": 1}, {"id": 2}]


def _spec(**flags: object) -> ToolSpec:
    return ToolSpec("checked_tool", _text, **flags)  # type: ignore[arg-type]


def test_empty_schema_on_a_tabular_tool_adds_a_contract_warning() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=True)(_text)
    envelope = call(wrap_for_dispatch(name, _text))
    assert envelope.data == "rendered report"
    assert [(w.kind, w.details["tool"]) for w in envelope.warnings] == [("contract", name)]
    assert "empty schema" in envelope.warnings[0].message


def test_empty_schema_on_a_non_tabular_tool_is_fine() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(_text)
    assert call(wrap_for_dispatch(name, _text)).warnings == []


def test_measured_schema_on_a_tabular_tool_adds_no_warning() -> None:
    name = fresh_name()
    uniform_contract(name=name, is_tabular=True)(_records)
    envelope = call(wrap_for_dispatch(name, _records))
    assert (envelope.rows, envelope.warnings) == (2, [])


def test_unexpected_ok_is_kept_with_a_contract_warning() -> None:
    ok = Ok(rows=1, data="x")
    checked = validate_envelope(ok, _spec(is_tabular=False, expected_envelopes={"hint", "err"}))
    assert checked.data == "x"
    assert checked.warnings[0].details == {"tool": "checked_tool", "envelope": "ok"}
    assert "outside its expected envelopes (err, hint)" in checked.warnings[0].message


def test_unexpected_hint_is_kept_with_a_contract_note() -> None:
    hint = Hint("schema", "no column x", [{"label": "y", "score": 0.5}])
    checked = validate_envelope(hint, _spec(is_tabular=False, expected_envelopes={"ok", "err"}))
    note = "⚠ contract: tool 'checked_tool' returned hint, outside its expected envelopes (err, ok)"
    assert checked.message == f"no column x\n{note}"
    assert checked.alternatives == hint.alternatives


def test_unexpected_err_keeps_its_kind_and_gains_a_note() -> None:
    checked = validate_envelope(Err("boom", "RuntimeError"), _spec(is_tabular=False, expected_envelopes={"ok"}))
    assert checked.err_kind == "RuntimeError"
    assert checked.message.startswith("boom\n⚠ contract:")


def test_expected_envelopes_pass_untouched() -> None:
    err = Err("boom", "RuntimeError")
    assert validate_envelope(err, _spec(is_tabular=True)) is err


def test_validation_does_not_mutate_the_handlers_ok() -> None:
    ok = Ok(rows=0)
    checked = validate_envelope(ok, _spec(is_tabular=True))
    assert ok.warnings == []
    assert len(checked.warnings) == 1

"""Envelopes travel on as ToolResults, and tools reading each other get the data."""

from __future__ import annotations

from registry.contract import (
    Effects,
    Err,
    Hint,
    Ok,
    content_for_data,
    envelope_to_tool_result,
    render_envelope,
    uniform_contract,
    wrap_for_dispatch,
)
from registry.result import ToolResult

from . import call, fresh_name


def test_ok_becomes_a_successful_tool_result_carrying_its_effects() -> None:
    effects = Effects(
        cards=[{"type": "chart"}], datasets={"d": [{"a": 1}]}, exports={"f.csv": {"path": "/x"}}, cost=0.2
    )
    envelope = Ok(rows=1, data="a chart", effects=effects)
    result = envelope_to_tool_result(envelope)
    assert result == ToolResult(
        content="✓ ok. 1 row.\na chart",
        cards=[{"type": "chart"}],
        cost=0.2,
        datasets={"d": [{"a": 1}]},
        exports={"f.csv": {"path": "/x"}},
    )


def test_hint_becomes_a_non_error_tool_result() -> None:
    hint = Hint("fetch", "needs a filter", add="year=2024")
    result = envelope_to_tool_result(hint)
    assert result.ok
    assert result.content == "⚠ fetch hint: needs a filter\nadd: year=2024"


def test_err_becomes_a_failed_tool_result_with_its_message() -> None:
    result = envelope_to_tool_result(Err("disk full", "OSError"))
    assert (result.error, result.content) == ("disk full", "✗ error (OSError): disk full")


def test_reading_ok_output_as_data_strips_only_the_status_line() -> None:
    rendered = render_envelope(Ok(rows=2, data=[{"a": 1}, {"a": 2}]))
    assert content_for_data(rendered) == "a\n1\n2"
    assert content_for_data("✓ ok. 0 rows.") == ""


def test_reading_hint_or_err_output_as_data_leaves_it_intact() -> None:
    for envelope in (Hint("schema", "no such table"), Err("timeout", "TimeoutError")):
        rendered = render_envelope(envelope)
        assert content_for_data(rendered) == rendered


def test_reading_text_that_is_not_a_render_leaves_it_intact() -> None:
    assert content_for_data("plain legacy text") == "plain legacy text"


def test_legacy_text_round_trips_through_dispatch_and_the_reader() -> None:
    def handler(inputs: dict, context: dict) -> ToolResult:
        return ToolResult(content="Paris is the capital of France.\nSource: atlas")

    name = fresh_name()
    uniform_contract(name=name, is_tabular=False)(handler)
    result = envelope_to_tool_result(call(wrap_for_dispatch(name, handler)))
    assert content_for_data(result.content) == "Paris is the capital of France.\nSource: atlas"

"""Legacy returns (ToolResult, legacy dicts, plain values) are coerced as the spec says."""

from __future__ import annotations

import pandas as pd

from registry.contract import Err, Hint, Ok, coerce_return
from registry.result import ToolResult


def test_error_prefixed_schema_hint_becomes_a_schema_hint() -> None:
    envelope = coerce_return(ToolResult.failure("schema hint: no column STATECODE"))
    assert isinstance(envelope, Hint)
    assert (envelope.hint_kind, envelope.message, envelope.alternatives) == (
        "schema",
        "no column STATECODE",
        [],
    )


def test_error_prefixed_fetch_hint_in_a_legacy_dict_becomes_a_fetch_hint() -> None:
    envelope = coerce_return({"message": "", "error": "Fetch hint: this source needs a date filter"})
    assert isinstance(envelope, Hint)
    assert (envelope.hint_kind, envelope.message) == ("fetch", "this source needs a date filter")


def test_other_errors_become_legacy_errs() -> None:
    envelope = coerce_return(ToolResult.failure("connection refused"))
    assert isinstance(envelope, Err)
    assert (envelope.err_kind, envelope.message) == ("legacy", "connection refused")


def test_hint_prefix_counts_only_at_the_start_of_the_error() -> None:
    envelope = coerce_return(ToolResult.failure("upstream said: schema hint: x"))
    assert isinstance(envelope, Err)


def test_extra_content_of_a_legacy_error_is_kept_under_the_message() -> None:
    result = ToolResult(content="Known columns: STATE_CODE, STATE_NAME", error="schema hint: no column STATECODE")
    envelope = coerce_return(result)
    assert envelope.message == "no column STATECODE\nKnown columns: STATE_CODE, STATE_NAME"


def test_success_is_measured_from_the_first_dataset() -> None:
    first = pd.DataFrame({"a": [1, 2, 3]})
    second = pd.DataFrame({"b": range(10)})
    envelope = coerce_return(ToolResult(content="Loaded 3 rows.", datasets={"first": first, "second": second}))
    assert isinstance(envelope, Ok)
    assert envelope.rows == 3
    assert [column.name for column in envelope.schema] == ["a"]
    assert envelope.data == "Loaded 3 rows."


def test_effects_carry_cards_datasets_exports_and_cost() -> None:
    card = {"type": "chart", "data": {}}
    export = {"path": "/tmp/x.csv", "mime_type": "text/csv", "size_bytes": 3}
    result = ToolResult(content="done", cards=[card], cost=0.25, datasets={"d": [{"x": 1}]}, exports={"x.csv": export})
    effects = coerce_return(result).effects
    assert (effects.cards, effects.cost, effects.exports) == ([card], 0.25, {"x.csv": export})
    assert effects.datasets == {"d": [{"x": 1}]}


def test_legacy_dict_success_keeps_its_cards_and_message() -> None:
    envelope = coerce_return({"message": "2 matches", "cards": {"type": "data_profile"}, "metadata": {}})
    assert isinstance(envelope, Ok)
    assert (envelope.rows, envelope.data, envelope.effects.cards) == (
        1,
        "2 matches",
        [{"type": "data_profile"}],
    )


def test_text_without_datasets_is_one_row_and_empty_text_none() -> None:
    assert coerce_return(ToolResult(content="an answer")).rows == 1
    assert coerce_return("an answer").rows == 1
    assert coerce_return(ToolResult()).rows == 0
    assert coerce_return("").rows == 0


def test_none_is_zero_rows_of_nothing() -> None:
    envelope = coerce_return(None)
    assert (envelope.rows, envelope.schema, envelope.data) == (0, [], None)


def test_a_returned_list_of_records_is_the_measured_data() -> None:
    records = [{"id": 1}, {"id": 2}]
    envelope = coerce_return(records)
    assert (envelope.rows, envelope.data, [c.name for c in envelope.schema]) == (2, records, ["id"])


def test_a_plain_dict_is_one_inferred_row_not_a_legacy_result() -> None:
    envelope = coerce_return({"symbol": "Na"})
    assert (envelope.rows, envelope.schema[0].dtype_provenance) == (1, "inferred")


def test_envelopes_pass_through_unchanged() -> None:
    for envelope in (Ok(rows=2, data=[1, 2]), Hint("ambiguous", "two matches"), Err("boom", "RuntimeError")):
        assert coerce_return(envelope) is envelope


def test_a_non_text_legacy_error_is_read_as_text() -> None:
    envelope = coerce_return(ToolResult(error=404))  # type: ignore[arg-type]
    assert envelope == Err(message="404", err_kind="legacy")

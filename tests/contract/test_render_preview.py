"""The Ok preview is a bounded window that never misstates what it shows."""

from __future__ import annotations

from fractions import Fraction

import pandas as pd

from registry.contract import Hint, Ok, coerce_return, render_envelope
from registry.contract_render import PREVIEW_MAX_CELL, PREVIEW_MAX_CHARS, PREVIEW_MAX_COLUMNS


def _lines(envelope: Ok) -> list[str]:
    return render_envelope(envelope).split("\n")


def test_preview_states_true_row_count_and_marks_elided_rows() -> None:
    frame = pd.DataFrame({"n": range(1000)})
    lines = _lines(coerce_return(frame))
    assert lines[0] == "✓ ok. 1,000 rows."
    assert lines[2] == "preview: first 5 and last 5 of 1,000 rows"
    assert lines[3:9] == ["n", "0", "1", "2", "3", "4"]
    assert lines[9] == "... (990 more rows) ..."
    assert lines[10:] == ["995", "996", "997", "998", "999"]


def test_one_elided_row_is_counted_in_the_singular() -> None:
    assert "... (1 more row) ..." in _lines(coerce_return(list(range(11))))


def test_short_tables_are_shown_whole_without_a_preview_label() -> None:
    lines = _lines(coerce_return([{"a": 1}, {"a": 2}]))
    assert lines == ["✓ ok. 2 rows.", "schema: a:int", "a", "1", "2"]


def test_single_row_is_counted_in_the_singular() -> None:
    assert _lines(Ok(rows=1, data="x"))[0] == "✓ ok. 1 row."


def test_wide_tables_say_how_many_columns_are_hidden() -> None:
    frame = pd.DataFrame([list(range(30))], columns=[f"c{n}" for n in range(30)])
    lines = _lines(coerce_return(frame))
    assert lines[2] == f"preview: all 1 row, first {PREVIEW_MAX_COLUMNS} of 30 columns"
    assert lines[3].split(" | ") == [f"c{n}" for n in range(PREVIEW_MAX_COLUMNS)]
    # The schema line still names every column.
    assert "c29:int64" in lines[1]


def test_preview_says_when_data_holds_fewer_rows_than_the_true_count() -> None:
    envelope = Ok(rows=16_000, data=[{"id": n} for n in range(3)])
    assert _lines(envelope)[1] == "preview: the data holds 3 of the 16,000 rows"


def test_text_data_is_never_truncated() -> None:
    text = "paragraph\n" * 5000
    assert render_envelope(coerce_return(text)) == f"✓ ok. 1 row.\n{text}"


def test_large_non_tabular_data_is_a_labelled_bounded_preview() -> None:
    payload = {"u": list(range(2000)), "v": list(range(2000))}
    rendered = render_envelope(Ok(rows=1, data=payload))
    lines = rendered.split("\n")
    assert lines[1].startswith(f"preview: first {PREVIEW_MAX_CHARS:,} of ")
    assert lines[1].endswith(" characters")
    assert len(lines[2]) == PREVIEW_MAX_CHARS + 1 and lines[2].endswith("…")


def test_cells_keep_one_row_per_line_and_mark_their_own_truncation() -> None:
    long_text = "x" * 100
    lines = _lines(coerce_return([{"note": "two\nlines | piped"}, {"note": long_text}]))
    assert lines[3] == "two\\nlines \\| piped"
    assert lines[4] == "x" * (PREVIEW_MAX_CELL - 1) + "…"


def test_dataframe_preview_shows_a_meaningful_index_but_not_row_numbers() -> None:
    indexed = pd.DataFrame({"v": [1]}, index=pd.Index(["a"], name="key"))
    assert _lines(coerce_return(indexed))[2:] == ["key | v", "a | 1"]
    assert _lines(coerce_return(pd.DataFrame({"v": [1]})))[2:] == ["v", "1"]


def test_series_is_previewed_as_one_column() -> None:
    assert _lines(coerce_return(pd.Series([1.5, None], name="depth")))[2:] == ["depth", "1.5", "null"]


def test_list_of_scalars_is_previewed_as_a_value_column() -> None:
    assert _lines(coerce_return(["a", {"b": 1}]))[2:] == ["value", "a", '{"b": 1}']


def test_nothing_follows_the_status_line_of_an_empty_result() -> None:
    assert render_envelope(coerce_return(None)) == "✓ ok. 0 rows."


def test_scores_of_any_real_type_render_with_two_decimals() -> None:
    rendered = render_envelope(
        Hint("ambiguous", "two", [{"label": "a", "score": Fraction(1, 3)}, {"label": "b", "score": 0}])
    )
    assert rendered.split("\n")[2:] == ["  1. a (score 0.33)", "  2. b (score 0.00)"]

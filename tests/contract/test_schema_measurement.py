"""Schemas are measured from the data a tool actually returned."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pandas as pd

from registry.contract import ColumnSpec, measure, measure_schema

REPO = Path(__file__).resolve().parents[2]


def test_dataframe_columns_are_measured_with_null_and_distinct_counts() -> None:
    frame = pd.DataFrame({"city": ["Oslo", "Lima", "Oslo"], "population": [700_000, None, 700_000]})
    rows, schema = measure(frame)
    assert rows == 3
    assert schema == [
        ColumnSpec("city", str(frame["city"].dtype), null_count=0, distinct_count=2),
        ColumnSpec("population", "float64", null_count=1, distinct_count=1),
    ]


def test_duplicate_column_names_are_measured_by_position() -> None:
    frame = pd.DataFrame([[1, "a"], [2, None]], columns=["x", "x"])
    assert [(c.name, c.null_count) for c in measure_schema(frame)] == [("x", 0), ("x", 1)]


def test_unhashable_dataframe_cells_leave_distinct_count_unknown() -> None:
    frame = pd.DataFrame({"tags": [["a"], ["b"]]})
    assert measure_schema(frame)[0].distinct_count is None


def test_series_is_one_measured_column() -> None:
    assert measure(pd.Series([1, 2, 2], name="n")) == (3, [ColumnSpec("n", "int64", 0, 2)])
    assert measure_schema(pd.Series([1.5]))[0].name == "value"


def test_list_of_dicts_is_measured_as_union_of_keys_with_missing_as_null() -> None:
    records = [{"id": 1, "name": "a"}, {"id": 2}, {"id": 3, "name": None, "score": 0.5}]
    rows, schema = measure(records)
    assert rows == 3
    assert schema == [
        ColumnSpec("id", "int", null_count=0, distinct_count=3),
        ColumnSpec("name", "str", null_count=2, distinct_count=1),
        ColumnSpec("score", "float", null_count=2, distinct_count=1),
    ]


def test_column_dtypes_combine_ints_into_floats_and_otherwise_say_mixed() -> None:
    schema = measure_schema([{"a": 1, "b": 1, "c": None}, {"a": 2.5, "b": "x", "c": None}])
    assert [column.dtype for column in schema] == ["float", "mixed", "null"]


def test_python_dtypes_distinguish_bools_and_datetimes_from_their_bases() -> None:
    schema = measure_schema([{"flag": True, "at": dt.datetime(2026, 1, 1), "on": dt.date(2026, 1, 1)}])
    assert [column.dtype for column in schema] == ["bool", "datetime", "date"]


def test_unhashable_cells_leave_distinct_count_unknown() -> None:
    column = measure_schema([{"tags": ["a"]}, {"tags": ["b"]}])[0]
    assert (column.dtype, column.distinct_count) == ("list", None)


def test_list_of_scalars_is_one_value_column() -> None:
    assert measure(["a", "b", "a"]) == (3, [ColumnSpec("value", "str", 0, 2)])


def test_single_row_dict_scalars_are_inferred() -> None:
    rows, schema = measure({"symbol": "Na", "number": 11, "note": None})
    assert rows == 1
    assert schema == [
        ColumnSpec("symbol", "str", dtype_provenance="inferred"),
        ColumnSpec("number", "int", dtype_provenance="inferred"),
        ColumnSpec("note", "null", dtype_provenance="inferred"),
    ]


def test_text_none_and_other_objects_have_no_schema() -> None:
    assert measure("some text") == (1, [])
    assert measure("") == (0, [])
    assert measure(None) == (0, [])
    assert measure(42) == (1, [])
    assert measure([]) == (0, [])


def test_measuring_plain_data_does_not_import_pandas() -> None:
    script = (
        "import sys\n"
        "from registry.contract import coerce_return, render_envelope\n"
        "render_envelope(coerce_return([{'a': 1}]))\n"
        "render_envelope(coerce_return('text'))\n"
        "sys.exit(1 if 'pandas' in sys.modules else 0)\n"
    )
    completed = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr or "pandas was imported"

"""preview_data, describe_entry and present_rows over an uploaded CSV."""

from __future__ import annotations

import pytest

from tests.conftest import text

pytestmark = pytest.mark.django_db(transaction=True)


def test_preview_shows_rows_with_measured_schema_and_quality_warnings(sales, in_conversation):
    result = in_conversation("preview_data", dataset="sales", rows=3)
    assert result.error is None, result.content
    assert "schema: region:" in result.content
    assert "price:float64 (1 null)" in result.content.replace("Float64", "float64")
    assert "north" in text(result)
    assert "5 rows" in result.content


def test_preview_without_a_name_uses_the_latest_dataset(sales, in_conversation):
    assert "region" in in_conversation("preview_data").content


def test_preview_of_an_unknown_dataset_is_a_schema_hint_with_the_closest_name(sales, in_conversation):
    result = in_conversation("preview_data", dataset="sale")
    assert result.error is None
    assert result.content.startswith("⚠ schema hint:")
    assert "sales" in result.content


def test_preview_outside_a_conversation_is_an_error(sales, call):
    result = call("preview_data", dataset="sales")
    assert result.error and "conversation" in result.content


def test_describe_entry_explains_a_dataset_with_its_provenance(sales, in_conversation):
    result = in_conversation("describe_entry", name="sales")
    assert '"source": "upload"' in result.content and "sales.csv" in result.content


def test_describe_entry_explains_a_tool(sales, in_conversation):
    assert "input_schema" in in_conversation("describe_entry", name="query", kind="tool").content


def test_describe_entry_of_nothing_lists_the_closest_names(sales, in_conversation):
    result = in_conversation("describe_entry", name="salez")
    assert result.content.startswith("⚠ schema hint:") and "sales" in result.content


def test_present_rows_sends_a_table_card(sales, in_conversation):
    result = in_conversation("present_rows", dataset="sales", columns=["region", "units"], limit=2)
    assert result.error is None
    (card,) = result.cards
    assert card["type"] == "table" and card["columns"] == ["region", "units"]
    assert card["rows"] == [["north", 10], ["south", 4]] and card["total_rows"] == 5
    assert "showing 2 of 5 rows" in result.content


def test_present_rows_with_an_unknown_column_names_the_field_and_real_columns(sales, in_conversation):
    result = in_conversation("present_rows", dataset="sales", columns=["regoin"])
    assert "columns: no column 'regoin'" in result.content and "region" in result.content

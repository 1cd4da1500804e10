"""An upload past a dataset limit — columns, rows, cells — is a 400 naming the limit and its
variable, for every format, before pandas builds the frame; one at the limit is a dataset."""

import io
import json
import time

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datacatalog.files import register_export
from datacatalog.store import CatalogError, ConversationCatalog
from datacatalog.uploads import EXCEL_MIME
from tests.conftest import TENANT
from tests.data.test_uploads_and_downloads_over_rest import upload
from tests.hostile_files import csv_table as csv

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def small_limits(settings):
    """Limits small enough that a file one past them is cheap to make (and to read on old code)."""
    settings.INPUT_LIMITS = {
        **settings.INPUT_LIMITS,
        "MAX_COLUMNS": 50,
        "MAX_ROWS": 200,
        "MAX_CELLS": 2_000,
        "WORKBOOK_MAX_CELLS": 500,
    }
    return settings.INPUT_LIMITS


def records(rows: int, columns: int) -> bytes:
    return json.dumps([{f"c{n}": 1 for n in range(columns)} for _ in range(rows)]).encode()


def parquet(rows: int, columns: int) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.table({f"c{n}": [1] * rows for n in range(columns)}), buffer)
    return buffer.getvalue()


def workbook(cells: dict[str, int] | None = None, rows: int = 0, columns: int = 0) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    for row in range(1, rows + 1):
        for column in range(1, columns + 1):
            sheet.cell(row=row, column=column, value=row if row > 1 else f"c{column}")
    for ref, value in (cells or {}).items():
        sheet[ref] = value
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def refused(response, variable: str) -> str:
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert variable in error, error
    return error


MAKERS = {
    "csv": lambda rows, columns: ("t.csv", csv(rows, columns)),
    "tsv": lambda rows, columns: ("t.tsv", csv(rows, columns, "\t")),
    "json": lambda rows, columns: ("t.json", records(rows, columns)),
    "parquet": lambda rows, columns: ("t.parquet", parquet(rows, columns)),
    "xlsx": lambda rows, columns: ("t.xlsx", workbook(rows=rows + 1, columns=columns)),
}


@pytest.mark.parametrize("kind", MAKERS)
def test_one_column_past_the_limit_is_refused_in_every_format(ann, conversation, small_limits, kind):
    name, payload = MAKERS[kind](2, 51)
    error = refused(upload(ann, conversation.id, name, payload), "EUNICE_DATASET_MAX_COLUMNS")
    assert "51" in error and "the limit is 50 (EUNICE_DATASET_MAX_COLUMNS)" in error


@pytest.mark.parametrize("kind", MAKERS)
def test_one_row_past_the_limit_is_refused_in_every_format(ann, conversation, small_limits, kind):
    name, payload = MAKERS[kind](201, 2)
    refused(upload(ann, conversation.id, name, payload), "EUNICE_DATASET_MAX_ROWS")


@pytest.mark.parametrize("kind", MAKERS)
def test_too_many_cells_is_refused_in_every_format(ann, conversation, small_limits, kind):
    name, payload = MAKERS[kind](100, 40)  # each within its limit; 4,000 cells are not
    refused(upload(ann, conversation.id, name, payload), "EUNICE_DATASET_MAX_CELLS")


@pytest.mark.parametrize("kind", MAKERS)
def test_a_file_at_the_limits_is_a_dataset(ann, conversation, small_limits, kind):
    name, payload = MAKERS[kind](40, 50)
    response = upload(ann, conversation.id, name, payload)
    assert response.status_code == 201, response.json()
    assert (response.json()["rows"], len(response.json()["columns"])) == (40, 50)


@pytest.mark.parametrize("columns", [100_000, 1_000_000])
def test_a_csv_of_a_hundred_thousand_columns_and_more_is_refused_at_once(ann, conversation, columns):
    """The reported case: 10^5 columns took 16 s and 1.1 GB, 10^6 took the server down."""
    payload = csv(1, columns)
    ann.get(f"/api/conversations/{conversation.id}/datasets/")  # the process's first request loads the API
    started = time.monotonic()
    error = refused(upload(ann, conversation.id, "wide.csv", payload), "EUNICE_DATASET_MAX_COLUMNS")
    assert f"{columns:,} columns; the limit is 2,000" in error
    assert time.monotonic() - started < 10


def test_separators_inside_quotes_are_not_columns(ann, conversation, small_limits):
    header = ",".join(f'"a,{n},b,c"' for n in range(50))
    response = upload(ann, conversation.id, "quoted.csv", (header + "\n" + ",".join("1" * 50) + "\n").encode())
    assert response.status_code == 201 and len(response.json()["columns"]) == 50


def test_one_far_cell_of_a_small_workbook_counts_every_row_and_column_before_it(ann, conversation, small_limits):
    # openpyxl (and pandas after it) fill every row and column up to the farthest cell.
    refused(upload(ann, conversation.id, "far.xlsx", workbook({"A1": 1, "B5000": 2})), "EUNICE_DATASET_MAX_ROWS")
    refused(upload(ann, conversation.id, "wide.xlsx", workbook({"A1": 1, "ZZ2": 2})), "EUNICE_DATASET_MAX_COLUMNS")


def test_nested_json_objects_count_as_the_columns_they_flatten_into(ann, conversation, small_limits):
    payload = json.dumps([{"a": {f"k{n}": {"x": 1} for n in range(51)}}]).encode()
    refused(upload(ann, conversation.id, "nested.json", payload), "EUNICE_DATASET_MAX_COLUMNS")


def test_no_dataset_past_the_limits_is_stored(conversation, small_limits):
    books = ConversationCatalog(TENANT, conversation.id)
    with pytest.raises(CatalogError, match="EUNICE_DATASET_MAX_COLUMNS"):
        books.save("wide", pd.DataFrame({f"c{n}": [1] for n in range(51)}), source="tool")
    assert books.names() == []


def test_a_workbook_with_more_cells_than_openpyxl_may_load_is_a_hint(conversation, small_limits, in_conversation):
    generated = register_export(
        TENANT, conversation.id, "big.xlsx", workbook(rows=30, columns=20), EXCEL_MIME, source_tool="upload"
    )
    result = in_conversation("manipulate_excel", file_id=generated["file_id"])
    assert result.content.startswith("⚠ schema hint") and "EUNICE_WORKBOOK_MAX_CELLS" in result.content

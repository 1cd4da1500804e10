"""Every file a user (or a model) hands us is read here, within limits checked before parsing.

A parser allocates for what it finds: a 3 MB CSV header of a million columns
costs pandas gigabytes, a 1 MB zip declares a 400 MB sheet. So each reader
first measures what the file *declares* or what a cheap scan finds — a CSV's
header fields and line count, a Parquet footer's rows, columns and
uncompressed size, a zip's central directory, a sheet's cell references —
and refuses past the limits of ``settings.INPUT_LIMITS`` with
``InputTooLarge``, whose message names the limit and its variable. Only then
does pandas (or openpyxl, python-docx, pypdf) see the bytes; the frame it
builds is checked again, cheaply, in case a scan undercounted.

Readers: ``read_table`` (an upload: CSV, TSV, JSON, xlsx, Parquet),
``read_csv_file`` / ``read_parquet_file`` (datasource and catalog files),
``open_workbook`` (xlsx for openpyxl), ``open_docx`` and ``pdf_page_texts``.
``check_zip`` is the archive rule all zip formats share.
tests/data/test_every_reader_is_bounded.py fails when a pandas, openpyxl,
python-docx or pypdf reader is called anywhere else.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings

from eunice.jsonlimits import loads_bounded

if TYPE_CHECKING:
    import pandas as pd

Source = bytes | str | Path
# Below this, a member's ratio says little (a few kilobytes of repeated XML compress
# a thousandfold); above it, a high ratio is what a bomb looks like.
RATIO_FLOOR_BYTES = 1 << 20
_CHUNK = 1 << 20


class InputTooLarge(ValueError):
    """The input is past one of the limits; the message names it and its setting."""

    def __init__(self, what: str, found: str, limit: int, setting: str, unit: str = "") -> None:
        super().__init__(f"{what} has {found}; the limit is {limit:,}{unit} ({setting})")
        self.limit, self.setting = limit, setting


class UnsupportedArchive(InputTooLarge):
    """An archive member compressed with a method whose inflation zipfile does not bound."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)
        self.limit, self.setting = 0, ""


def limit(name: str) -> int:
    """One of ``settings.INPUT_LIMITS`` (read per call, so tests and reloads see changes)."""
    return settings.INPUT_LIMITS[name]


# --- Archives ----------------------------------------------------------------

_SETTINGS = {
    "ARCHIVE_MAX_BYTES": "EUNICE_ARCHIVE_MAX_MB",
    "ARCHIVE_MAX_RATIO": "EUNICE_ARCHIVE_MAX_RATIO",
    "ARCHIVE_MAX_MEMBERS": "EUNICE_ARCHIVE_MAX_MEMBERS",
    "MAX_COLUMNS": "EUNICE_DATASET_MAX_COLUMNS",
    "MAX_ROWS": "EUNICE_DATASET_MAX_ROWS",
    "MAX_CELLS": "EUNICE_DATASET_MAX_CELLS",
    "MAX_DECODED_BYTES": "EUNICE_DATASET_MAX_MB",
    "PDF_MAX_PAGES": "EUNICE_PDF_MAX_PAGES",
    "WORKBOOK_MAX_CELLS": "EUNICE_WORKBOOK_MAX_CELLS",
}


def _refuse_past(name: str, value: int, what: str, found: str) -> None:
    if value > limit(name):
        if name.endswith("_BYTES"):  # set in MB, so named in MB
            raise InputTooLarge(what, found, limit(name) >> 20, _SETTINGS[name], " MB")
        raise InputTooLarge(what, found, limit(name), _SETTINGS[name])


def check_zip(source: Source | IO[bytes], *, what: str = "the archive") -> zipfile.ZipFile:
    """The open ``ZipFile`` of ``source``, once its central directory is within the limits.

    Counts members from the end record before Python builds an object for each,
    then sums declared sizes and checks each large member's compression ratio.
    Python's zipfile never inflates past a member's declared size, so what is
    declared is what a reader can get. Raises InputTooLarge, or zipfile.BadZipFile.
    """
    handle = io.BytesIO(source) if isinstance(source, bytes) else source
    _check_member_count(handle, what)
    archive = zipfile.ZipFile(handle)
    try:
        _check_members(archive.infolist(), what)
    except BaseException:
        archive.close()
        raise
    return archive


def _check_member_count(handle: Any, what: str) -> None:
    if isinstance(handle, (str, Path)):
        with open(handle, "rb") as opened:
            return _check_member_count(opened, what)
    end = zipfile._EndRecData(handle)  # noqa: SLF001 - the end record, read before any member is
    if end is None:
        raise zipfile.BadZipFile("not a zip file (no end of central directory)")
    handle.seek(0)
    count = end[zipfile._ECD_ENTRIES_TOTAL]  # noqa: SLF001
    _refuse_past("ARCHIVE_MAX_MEMBERS", count, what, f"{count:,} members")
    return None


def _check_members(members: list[zipfile.ZipInfo], what: str) -> None:
    _refuse_past("ARCHIVE_MAX_MEMBERS", len(members), what, f"{len(members):,} members")
    ratio_limit = limit("ARCHIVE_MAX_RATIO")
    for member in members:  # before the total: a bomb's ratio says more than its size
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 and lzma members inflate without a bound per read in zipfile.
            raise UnsupportedArchive(
                f"{what} member {member.filename[:80]!r} uses compression method "
                f"{member.compress_type}; only stored and deflated members are read"
            )
        if member.file_size > RATIO_FLOOR_BYTES:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > ratio_limit:
                raise InputTooLarge(
                    f"{what} member {member.filename[:80]!r}",
                    f"a compression ratio of {ratio:,.0f} to 1",
                    ratio_limit,
                    "EUNICE_ARCHIVE_MAX_RATIO",
                    " to 1",
                )
    total = sum(member.file_size for member in members)
    _refuse_past("ARCHIVE_MAX_BYTES", total, what, f"{total:,} bytes once uncompressed")


def open_docx(data: bytes) -> Any:
    """A python-docx Document of ``data`` once its archive is within the limits. Raises InputTooLarge."""
    from docx import Document

    check_zip(data, what="the DOCX").close()
    return Document(io.BytesIO(data))


def pdf_page_texts(data: bytes) -> list[str]:
    """The text of each page of a PDF of at most EUNICE_PDF_MAX_PAGES pages, every stream of
    which inflates to at most EUNICE_PDF_MAX_STREAM_MB (pypdf's own ceilings, set to ours for
    this read only). Raises InputTooLarge, or pypdf's errors (LimitReachedError past a stream cap)."""
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import LimitReachedError

    cap = limit("PDF_MAX_STREAM_BYTES")
    with apply_configuration(
        disable_legacy_handling=True,
        **dict.fromkeys(_PDF_STREAM_CAPS, cap),
        stream_decoding_work_maximum_length=4 * cap,
    ):
        try:
            reader = PdfReader(io.BytesIO(data))
            pages = len(reader.pages)
            _refuse_past("PDF_MAX_PAGES", pages, "the PDF", f"{pages:,} pages")
            return [_page_text(page) for page in reader.pages]
        except LimitReachedError:
            raise InputTooLarge(
                "a stream of the PDF",
                "more bytes once decompressed than allowed",
                cap >> 20,
                "EUNICE_PDF_MAX_STREAM_MB",
                " MB",
            ) from None


def _page_text(page: Any) -> str:
    # extract_text swallows a stream past its cap (and reads the page as blank): decoding the
    # contents first lets the cap be reported; pypdf keeps the decoded stream for extract_text.
    page.get_contents()
    return page.extract_text() or ""


_PDF_STREAM_CAPS = (
    "maximum_declared_stream_length",
    "array_based_stream_maximum_output_length",
    "jbig2_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "zlib_maximum_output_length",
    "brotli_maximum_output_length",
    "image_maximum_buffer_size",
)


def open_workbook(path: Source, **options: Any) -> Any:
    """An openpyxl workbook of ``path`` (fully loaded: every cell an object) once its archive
    and its cells, over all sheets, are within the limits. Raises InputTooLarge."""
    from openpyxl import load_workbook

    with check_zip(path, what="the workbook") as archive:
        cells = sum(_sheet_scan(archive, sheet)[1] for sheet in _sheet_paths(path))
    _refuse_past("WORKBOOK_MAX_CELLS", cells, "the workbook", f"{cells:,} cells")
    return load_workbook(path, **options)


# --- Tables ------------------------------------------------------------------


def read_table(kind: str, payload: bytes, *, sep: str = ",") -> pd.DataFrame:
    """``payload`` (``kind``: csv, excel, parquet or json) as a DataFrame within the dataset limits.

    Raises InputTooLarge, or the parser's own errors (ValueError, pandas'
    ParserError / EmptyDataError, zipfile.BadZipFile, OSError, KeyError).
    """
    _refuse_past("MAX_DECODED_BYTES", len(payload), "the file", f"{len(payload):,} bytes")
    reader = {
        "csv": lambda: _csv(payload, sep),
        "excel": lambda: _excel(payload),
        "parquet": lambda: read_parquet_file(io.BytesIO(payload)),
        "json": lambda: _json(payload),
    }[kind]
    return check_frame(reader())


def read_csv_file(path: Source, *, sep: str = ",") -> pd.DataFrame:
    """A CSV file on disk, as ``read_table`` reads an uploaded one. Raises InputTooLarge or OSError."""
    size = Path(path).stat().st_size
    _refuse_past("MAX_DECODED_BYTES", size, "the file", f"{size:,} bytes")
    return read_table("csv", Path(path).read_bytes(), sep=sep)


def read_parquet_file(source: Source | IO[bytes]) -> pd.DataFrame:
    """A Parquet file once its footer declares a shape and an uncompressed size within the limits.

    Raises InputTooLarge, or pyarrow's errors (OSError, ValueError subclasses).
    """
    import pandas as pd
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(source)
    meta = parquet.metadata
    check_shape(meta.num_rows, meta.num_columns, "the Parquet file")
    # The pages' size once decompressed: what plain-encoded values occupy.
    decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    _refuse_past("MAX_DECODED_BYTES", decoded, "the Parquet file", f"{decoded:,} bytes uncompressed")
    # A dictionary-encoded text column stores each value once and an index per row, so
    # its pages say nothing of its decoded size: read it still encoded and measure.
    expanded = _expanded_bytes(source, parquet.schema_arrow)
    _refuse_past("MAX_DECODED_BYTES", expanded, "the Parquet file", f"{expanded:,} bytes once decoded")
    if hasattr(source, "seek"):
        source.seek(0)
    return pd.read_parquet(source)


def _expanded_bytes(source: Source | IO[bytes], schema: Any) -> int:
    """Bytes the file's columns take once decoded, text columns measured while still encoded."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    text = [
        f.name
        for f in schema
        if pa.types.is_string(f.type)
        or pa.types.is_large_string(f.type)
        or pa.types.is_binary(f.type)
        or pa.types.is_large_binary(f.type)
    ]
    if hasattr(source, "seek"):
        source.seek(0)
    table = pq.ParquetFile(source, read_dictionary=text).read()
    total = 0
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type):
                lengths = pc.binary_length(chunk.dictionary)
                total += (pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk)
            else:
                total += chunk.nbytes
    return total


def check_shape(rows: int, columns: int, what: str) -> None:
    """Raise InputTooLarge if ``rows`` × ``columns`` is past a dataset limit."""
    _refuse_past("MAX_COLUMNS", columns, what, f"{columns:,} columns")
    _refuse_past("MAX_ROWS", rows, what, f"{rows:,} rows")
    _refuse_past("MAX_CELLS", rows * columns, what, f"{rows * columns:,} cells ({rows:,} rows × {columns:,} columns)")


def check_frame(frame: pd.DataFrame, what: str = "the dataset") -> pd.DataFrame:
    """``frame`` if its shape is within the dataset limits. Raises InputTooLarge."""
    check_shape(len(frame), len(frame.columns), what)
    return frame


# A CSV field in quotes ("" escapes a quote): its separators are text.
_QUOTED = re.compile(rb'"[^"]*"')


def _csv(payload: bytes, sep: str) -> pd.DataFrame:
    import pandas as pd

    end = payload.find(b"\n")
    header = payload if end == -1 else payload[:end]
    columns = _QUOTED.sub(b"", header).count(sep.encode()) + 1
    # Lines bound rows from above (a quoted line break counts too): refusing early never undercounts.
    lines = payload.count(b"\n") + (0 if payload.endswith(b"\n") else 1)
    check_shape(max(lines - 1, 0), columns, "the CSV file")
    return pd.read_csv(io.BytesIO(payload), sep=sep)


def _json(payload: bytes) -> pd.DataFrame:
    # Every value but the last is followed by a comma: an upper bound on cells before parsing.
    import pandas as pd

    _refuse_past("MAX_CELLS", payload.count(b",") + 1, "the JSON file", f"up to {payload.count(b',') + 1:,} values")
    # Keys per object on average (a key is a string then a colon; counted in C, strings and
    # all): past the column limit, some object is wider than a dataset may be. A wide object
    # padded with nested ones is found once parsed, at the cost of parsing it.
    keys, objects = payload.count(b'":') + payload.count(b'" :'), payload.count(b"{")
    if objects and keys // objects > limit("MAX_COLUMNS"):
        _refuse_past("MAX_COLUMNS", keys // objects, "the JSON file", f"objects of {keys // objects:,} keys on average")
    value = loads_bounded(payload, what="the JSON file")
    if isinstance(value, dict):
        # {"rows": [...]} or {"data": [...]}: the one list inside is the table.
        lists = [v for v in value.values() if isinstance(v, list)]
        value = lists[0] if len(lists) == 1 else [value]
    if not isinstance(value, list):
        raise ValueError("expected a list of records or an object holding one")
    check_shape(len(value), _json_columns(value), "the JSON file")
    return pd.json_normalize(value)


def _json_columns(records: list) -> int:
    """The columns json_normalize would make (nested objects flatten to a.b), counted
    without building them; stops once past the column limit."""
    names: set[tuple] = set()
    cap = limit("MAX_COLUMNS")
    for record in records:
        stack = [((), record)] if isinstance(record, dict) else []
        while stack:
            prefix, node = stack.pop()
            if len(node) > cap:  # one object wider than the limit: no need to name its keys
                return len(node)
            for key, child in node.items():
                if isinstance(child, dict) and child:
                    stack.append(((*prefix, key), child))
                else:
                    names.add((*prefix, key))
            if len(names) > cap:
                return len(names)
    return len(names) or (1 if records else 0)


def _excel(payload: bytes) -> pd.DataFrame:
    import pandas as pd

    with check_zip(payload, what="the workbook") as archive:
        rows, columns = _sheet_extent(archive, _sheet_paths(io.BytesIO(payload))[0])
    check_shape(max(rows - 1, 0), columns, "the workbook's first sheet")  # the first row is the header
    return pd.read_excel(io.BytesIO(payload), engine="openpyxl")


def _sheet_paths(source: Source | IO[bytes]) -> list[str]:
    """The archive paths of the workbook's sheets, in order (pandas reads the first)."""
    from openpyxl.reader.excel import ExcelReader

    reader = ExcelReader(source, read_only=True)
    reader.read_manifest()
    reader.read_workbook()
    paths = [relation.target.lstrip("/") for _, relation in reader.parser.find_sheets()]
    if not paths:
        raise ValueError("the workbook has no worksheet")
    return paths


_ROW = re.compile(rb"<(?:\w+:)?row[\s>/]")
_CELL = re.compile(rb"<(?:\w+:)?c[\s>/]")
_REF_ROW = re.compile(rb'<(?:\w+:)?row\b[^>]*?\sr="(\d{1,9})"')
_REF_CELL = re.compile(rb'<(?:\w+:)?c\b[^>]*?\sr="([A-Z]{1,4})\d')


def _sheet_extent(archive: zipfile.ZipFile, path: str) -> tuple[int, int]:
    """``(rows, columns)`` a reader of the sheet at ``path`` would fill, from a streaming scan.

    Counts row and cell tags and reads the highest row number and column
    letters of their references: a single cell at XFD1048576 makes openpyxl
    (and pandas after it) fill every row and column before it.
    """
    rows, cells, max_row, widest = _sheet_scan(archive, path)
    columns = _column_number(widest) if widest else (cells // max(rows, 1) + 1 if cells else 0)
    return max(rows, max_row), max(columns, 1 if cells else 0)


def _sheet_scan(archive: zipfile.ZipFile, path: str) -> tuple[int, int, int, bytes]:
    """Row tags, cell tags, the highest row reference and the widest column letters of a sheet;
    stops (InputTooLarge) once the cells are past EUNICE_DATASET_MAX_CELLS and a header row."""
    cap = limit("MAX_CELLS") + limit("MAX_COLUMNS")
    rows = cells = max_row = 0
    widest = b""
    for chunk in _tag_chunks(archive, path):
        rows += len(_ROW.findall(chunk))
        cells += len(_CELL.findall(chunk))
        max_row = max([max_row, *map(int, _REF_ROW.findall(chunk))])
        widest = max([widest, *_REF_CELL.findall(chunk)], key=lambda letters: (len(letters), letters))
        if cells > cap:
            raise InputTooLarge(
                f"the sheet {path!r}", f"over {cells:,} cells", limit("MAX_CELLS"), "EUNICE_DATASET_MAX_CELLS"
            )
    return rows, cells, max_row, widest


def _tag_chunks(archive: zipfile.ZipFile, path: str) -> Iterator[bytes]:
    """The member's bytes in pieces that never cut a tag (each ends before its last ``<``)."""
    pending = b""
    with archive.open(path) as member:
        while chunk := member.read(_CHUNK):
            data = pending + chunk
            cut = data.rfind(b"<")
            cut = len(data) if cut <= 0 else cut
            yield data[:cut]
            pending = data[cut:]
    if pending:
        yield pending


def _column_number(letters: bytes) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + (letter - 64)
    return number

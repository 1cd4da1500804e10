"""Handlers of export (CSV/Parquet/JSON), export_excel and manipulate_excel (openpyxl)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

from datacatalog.access import readable_files
from datacatalog.files import file_card, register_export
from datacatalog.models import GeneratedFile
from datacatalog.uploads import EXCEL_MIME
from eunice.bounded_read import InputTooLarge, open_workbook
from eunice.tenant_files import is_tenant_file
from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from tools.datacommon import catalog, catalog_errors, check_columns, chosen_dataset, ranked
from tools.fragments import DATASET

if TYPE_CHECKING:
    import pandas as pd

_MIME = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet", "json": "application/json"}
READ_MAX_CELLS = 2000


@uniform_contract(name="export", is_tabular=False)
@catalog_errors
def export(inputs: dict, context: ToolContext) -> Ok:
    """Write a dataset to a CSV, Parquet or JSON file the user can download."""
    books, name, frame = chosen_dataset(context, inputs)
    if inputs.get("columns"):
        check_columns(frame, inputs["columns"], "columns")
        frame = frame[inputs["columns"]]
    fmt = inputs.get("format", "csv")
    payload = _encode(frame, fmt)
    filename = f"{inputs.get('filename') or name}.{fmt}"
    return _file_ok(
        context,
        books.conversation_id,
        filename,
        payload,
        _MIME[fmt],
        "export",
        f"Exported {len(frame):,} rows of {name!r} as {fmt}",
    )


def _encode(frame: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    if fmt == "json":
        return frame.to_json(orient="records", date_format="iso", indent=1).encode()
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _file_ok(
    context: ToolContext,
    conversation_id: str,
    filename: str,
    payload: bytes,
    mime: str,
    tool: str,
    said: str,
    warnings: list[Warning] | None = None,
) -> Ok:
    exported = register_export(context.tenant_id, conversation_id, filename, payload, mime, source_tool=tool)
    return Ok(
        rows=1,
        data=f"{said}: {exported['original_filename']} ({len(payload):,} bytes, file id "
        f"{exported['file_id']}), offered to the user for download.",
        warnings=list(warnings or []),
        effects=Effects(cards=[file_card(exported)], exports={exported["original_filename"]: exported}),
    )


@uniform_contract(name="export_excel", is_tabular=False)
@catalog_errors
def export_excel(inputs: dict, context: ToolContext) -> Ok:
    """One workbook, one sheet per dataset: bold frozen header, autofilter, widths, number formats,
    and optional formulas appended below each sheet's data."""
    import pandas as pd

    books = catalog(context)
    buffer = io.BytesIO()
    sheets = inputs["sheets"]
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        for sheet in sheets:
            frame = books.load(sheet["dataset"])
            title = (sheet.get("name") or sheet["dataset"])[:31]
            frame.to_excel(writer, sheet_name=title, index=False)
            _format(writer.sheets[title], frame, sheet)
    filename = f"{inputs.get('filename') or sheets[0]['dataset']}.xlsx"
    return _file_ok(
        context,
        books.conversation_id,
        filename,
        buffer.getvalue(),
        EXCEL_MIME,
        "export_excel",
        f"Wrote a workbook with {len(sheets)} sheet(s)",
    )


def _format(worksheet, frame: pd.DataFrame, sheet: dict) -> None:  # noqa: ANN001 - an openpyxl Worksheet
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    for cell in worksheet[1]:
        cell.font = Font(bold=True)
    worksheet.freeze_panes = "A2"
    worksheet.auto_filter.ref = worksheet.dimensions
    formats = sheet.get("number_formats") or {}
    check_columns(frame, list(formats), "number_formats")
    for index, column in enumerate(frame.columns, 1):
        letter = get_column_letter(index)
        width = max([len(str(column))] + [len(str(v)) for v in frame[column].head(200)])
        worksheet.column_dimensions[letter].width = min(60, width + 2)
        if column in formats:
            for row in range(2, len(frame) + 2):
                worksheet[f"{letter}{row}"].number_format = formats[column]
    for offset, (label, formula) in enumerate((sheet.get("formulas") or {}).items()):
        row = len(frame) + 2 + offset
        worksheet.cell(row=row, column=1, value=label).font = Font(bold=True)
        worksheet.cell(row=row, column=2, value=formula if formula.startswith("=") else f"={formula}")


@uniform_contract(name="manipulate_excel", is_tabular=False)
@catalog_errors
def manipulate_excel(inputs: dict, context: ToolContext) -> Ok:
    """Read or edit a workbook of this tenant (an upload or an earlier export); edits make a new file."""
    generated = _workbook_file(inputs["file_id"], context)
    try:
        workbook = open_workbook(generated.path)
    except InputTooLarge as exc:
        raise HintException("schema", f"file_id {generated.pk} ({generated.filename}) is refused: {exc}") from None
    operations = inputs.get("operations") or []
    if not operations:
        return Ok(rows=len(workbook.sheetnames), data=_read(workbook, inputs.get("sheet"), inputs.get("range")))
    for number, operation in enumerate(operations, 1):
        _apply(workbook, operation, number, context)
    buffer = io.BytesIO()
    workbook.save(buffer)
    books = catalog(context)
    filename = inputs.get("filename") or f"{Path(generated.filename).stem}-edited.xlsx"
    return _file_ok(
        context,
        books.conversation_id,
        filename,
        buffer.getvalue(),
        EXCEL_MIME,
        "manipulate_excel",
        f"Applied {len(operations)} change(s)",
    )


def _workbook_file(file_id: int, context: ToolContext) -> GeneratedFile:
    files = readable_files(context).filter(mime_type=EXCEL_MIME)
    found = files.filter(pk=file_id).first()
    if found is None or not is_tenant_file(context.tenant_id, found.path):
        recent = [f"{f.pk}: {f.filename}" for f in files.order_by("-created_at")[:5]]
        raise HintException("schema", f"file_id: no workbook {file_id} of yours", ranked(recent))
    return found


def _sheet(workbook, name: str | None):  # noqa: ANN001, ANN202 - openpyxl objects
    if name is None:
        return workbook.active
    if name not in workbook.sheetnames:
        raise HintException("schema", f"sheet: no sheet {name!r}", ranked(workbook.sheetnames))
    return workbook[name]


def _read(workbook, sheet_name: str | None, cell_range: str | None) -> str:  # noqa: ANN001
    sheet = _sheet(workbook, sheet_name)
    if not cell_range:
        rows = sheet.iter_rows()
    else:  # the schema allows a cell ("B2", which openpyxl answers with the cell) or a rectangle (rows of cells)
        picked = sheet[cell_range]
        rows = picked if isinstance(picked, tuple) else ((picked,),)
    lines = [f"sheets: {', '.join(workbook.sheetnames)}; reading {sheet.title!r} ({sheet.dimensions})"]
    cells = 0
    for row in rows:
        values = [f"{c.coordinate}={c.value!r}" for c in row if c.value is not None]
        cells += len(values)
        if values:
            lines.append("  ".join(values))
        if cells > READ_MAX_CELLS:
            lines.append(f"… more cells; pass a smaller `range` (at most {READ_MAX_CELLS} cells are shown)")
            break
    return "\n".join(lines)


def _apply(workbook, operation: dict, number: int, context: ToolContext) -> None:  # noqa: ANN001
    import pandas as pd

    kind = operation["op"]
    if kind == "set_cells":
        sheet = _sheet(workbook, operation.get("sheet"))
        for ref, value in (operation.get("cells") or {}).items():
            sheet[ref] = value
    elif kind == "add_sheet":
        if operation["name"] in workbook.sheetnames:
            raise HintException(
                "schema", f"operations[{number}].name: sheet {operation['name']!r} exists", ranked(workbook.sheetnames)
            )
        sheet = workbook.create_sheet(operation["name"][:31])
        if operation.get("dataset"):
            frame = catalog(context).load(operation["dataset"])
            sheet.append([str(c) for c in frame.columns])
            for row in frame.itertuples(index=False):
                sheet.append([None if pd.isna(v) else (v.isoformat() if hasattr(v, "isoformat") else v) for v in row])
    elif kind == "rename_sheet":
        _sheet(workbook, operation.get("sheet")).title = operation["name"][:31]
    elif kind == "delete_sheet":
        del workbook[_sheet(workbook, operation.get("sheet")).title]


TOOLS = (
    Tool(
        name="export",
        description=(
            "Give the user a dataset as a downloadable CSV, Parquet or JSON file. For a "
            "formatted spreadsheet use export_excel."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "dataset": DATASET,
                "format": {"type": "string", "enum": ["csv", "parquet", "json"], "default": "csv"},
                "columns": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "filename": {
                    "type": "string",
                    "pattern": "^[A-Za-z0-9_.-]{1,100}$",
                    "description": "Without extension.",
                },
            },
            "additionalProperties": False,
        },
        handler=export,
        category="outputs",
        status_message="Exporting the file",
        timeout_seconds=60,
    ),
    Tool(
        name="export_excel",
        description=(
            "Give the user an Excel workbook with one sheet per dataset: bold frozen header, "
            "filters, column widths, optional number formats per column (e.g. '#,##0.00') and "
            "formulas written below the data (e.g. {'Total': '=SUM(C2:C6)'})."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "sheets": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 20,
                    "items": {
                        "type": "object",
                        "properties": {
                            "dataset": DATASET,
                            "name": {"type": "string", "maxLength": 31},
                            "number_formats": {"type": "object", "additionalProperties": {"type": "string"}},
                            "formulas": {"type": "object", "additionalProperties": {"type": "string"}},
                        },
                        "required": ["dataset"],
                        "additionalProperties": False,
                    },
                },
                "filename": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$"},
            },
            "required": ["sheets"],
            "additionalProperties": False,
        },
        handler=export_excel,
        category="outputs",
        status_message="Writing the workbook",
        timeout_seconds=60,
    ),
    Tool(
        name="manipulate_excel",
        description=(
            "Read or edit an Excel workbook the user uploaded or an earlier export (by file_id). "
            "Without operations it reads cells (optionally a sheet and range like 'A1:D20'). "
            "Operations: set_cells (values or '=formulas'), add_sheet (optionally filled from a "
            "dataset), rename_sheet, delete_sheet; the result is a new file."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "file_id": {"type": "integer", "minimum": 1},
                "sheet": {"type": "string"},
                "range": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]+(:[A-Z]{1,3}[0-9]+)?$"},
                "operations": {
                    "type": "array",
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": {
                                "type": "string",
                                "enum": ["set_cells", "add_sheet", "rename_sheet", "delete_sheet"],
                            },
                            "sheet": {"type": "string"},
                            "name": {"type": "string", "minLength": 1},
                            "dataset": DATASET,
                            "cells": {"type": "object", "description": "{'B7': 42, 'C7': '=SUM(C2:C6)'}"},
                        },
                        "required": ["op"],
                        "additionalProperties": False,
                    },
                },
                "filename": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$"},
            },
            "required": ["file_id"],
            "additionalProperties": False,
        },
        handler=manipulate_excel,
        category="outputs",
        status_message="Working on the workbook",
        timeout_seconds=60,
    ),
)

"""Output tools: charts, maps, files and workbooks for the user; telemetry."""

_DATASET = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "Dataset name in this conversation; omit for the most recent one.",
}

TOOLS = [
    {
        "name": "create_chart",
        "description": (
            "Draw a chart of a dataset for the user (bar, line, point, area): pick the x and y "
            "columns, optionally a color column and an aggregate. The chart is shown in the chat "
            "and saved as an SVG or PNG file. Aggregate large data with query first."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "dataset": _DATASET,
                "x": {"type": "string", "minLength": 1},
                "y": {"type": "string", "minLength": 1},
                "color": {"type": "string"},
                "mark": {"type": "string", "enum": ["bar", "line", "point", "area"], "default": "bar"},
                "aggregate": {"type": "string", "enum": ["sum", "mean", "count", "min", "max", "median"]},
                "title": {"type": "string", "maxLength": 200},
                "format": {"type": "string", "enum": ["svg", "png"], "default": "svg"},
            },
            "required": ["x", "y"],
            "additionalProperties": False,
        },
        "category": "outputs",
        "handler_path": "tools.charts.create_chart",
        "status_message": "Drawing the chart",
        "timeout_seconds": 60,
    },
    {
        "name": "display_map",
        "description": (
            "Show points on a map to the user, from a dataset with latitude/longitude columns or "
            "from a GeoJSON object. Calls with the same display_id add layers to the same map."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "dataset": _DATASET,
                "geojson": {"type": "object", "description": "A FeatureCollection or Feature, instead of a dataset."},
                "lat_column": {"type": "string"},
                "lon_column": {"type": "string"},
                "label_column": {"type": "string"},
                "display_id": {"type": "string", "default": "main", "maxLength": 64},
                "layer": {"type": "string", "maxLength": 64},
                "style": {"type": "string", "enum": ["circle", "heatmap", "line", "fill"], "default": "circle"},
            },
            "additionalProperties": False,
        },
        "category": "outputs",
        "handler_path": "tools.charts.display_map",
        "status_message": "Preparing the map",
        "timeout_seconds": 30,
    },
    {
        "name": "export",
        "description": (
            "Give the user a dataset as a downloadable CSV, Parquet or JSON file. For a "
            "formatted spreadsheet use export_excel."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "dataset": _DATASET,
                "format": {"type": "string", "enum": ["csv", "parquet", "json"], "default": "csv"},
                "columns": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "filename": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$", "description": "Without extension."},
            },
            "additionalProperties": False,
        },
        "category": "outputs",
        "handler_path": "tools.exports.export",
        "status_message": "Exporting the file",
        "timeout_seconds": 60,
    },
    {
        "name": "export_excel",
        "description": (
            "Give the user an Excel workbook with one sheet per dataset: bold frozen header, "
            "filters, column widths, optional number formats per column (e.g. '#,##0.00') and "
            "formulas written below the data (e.g. {'Total': '=SUM(C2:C6)'})."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "sheets": {
                    "type": "array", "minItems": 1, "maxItems": 20,
                    "items": {
                        "type": "object",
                        "properties": {
                            "dataset": _DATASET,
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
        "category": "outputs",
        "handler_path": "tools.exports.export_excel",
        "status_message": "Writing the workbook",
        "timeout_seconds": 60,
    },
    {
        "name": "manipulate_excel",
        "description": (
            "Read or edit an Excel workbook the user uploaded or an earlier export (by file_id). "
            "Without operations it reads cells (optionally a sheet and range like 'A1:D20'). "
            "Operations: set_cells (values or '=formulas'), add_sheet (optionally filled from a "
            "dataset), rename_sheet, delete_sheet; the result is a new file."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "file_id": {"type": "integer", "minimum": 1},
                "sheet": {"type": "string"},
                "range": {"type": "string", "pattern": "^[A-Z]{1,3}[0-9]+(:[A-Z]{1,3}[0-9]+)?$"},
                "operations": {
                    "type": "array", "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": {"type": "string", "enum": ["set_cells", "add_sheet", "rename_sheet", "delete_sheet"]},
                            "sheet": {"type": "string"},
                            "name": {"type": "string", "minLength": 1},
                            "dataset": _DATASET,
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
        "category": "outputs",
        "handler_path": "tools.exports.manipulate_excel",
        "status_message": "Working on the workbook",
        "timeout_seconds": 60,
    },
    {
        "name": "query_telemetry",
        "description": (
            "Look at what happened in this conversation: its tool calls (tool, outcome, time) or "
            "its events. A superuser may pass all_tenants for every tenant's tool calls."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "what": {"type": "string", "enum": ["tool_calls", "events"], "default": "tool_calls"},
                "conversation_id": {"type": "string"},
                "tool": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
                "all_tenants": {"type": "boolean", "default": False},
            },
            "additionalProperties": False,
        },
        "category": "outputs",
        "handler_path": "tools.telemetry.query_telemetry",
        "status_message": "Reading the telemetry",
        "timeout_seconds": 30,
    },
]

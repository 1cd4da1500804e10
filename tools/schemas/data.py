"""Data tools: look at, query and analyse the conversation's datasets."""

_DATASET = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "Dataset name in this conversation; omit for the most recent one.",
}
_SAVE_AS = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "Keep the whole result as a dataset of this name (for later tools and exports).",
}

_SQL_INPUT = {
    "type": "object",
    "properties": {
        "sql": {"type": "string", "minLength": 1, "description": "One SELECT statement."},
        "save_as": _SAVE_AS,
    },
    "required": ["sql"],
    "additionalProperties": False,
}

TOOLS = [
    {
        "name": "preview_data",
        "description": (
            "Look at a dataset of this conversation before working with it: the first rows "
            "(or a random sample), its columns with types, null and distinct counts, and "
            "data-quality warnings. Use it first on any uploaded file."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "dataset": _DATASET,
                "rows": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                "sample": {"type": "boolean", "default": False, "description": "Random rows instead of the first."},
            },
            "additionalProperties": False,
        },
        "category": "data",
        "handler_path": "tools.data.preview_data",
        "status_message": "Previewing the data",
        "timeout_seconds": 30,
    },
    {
        "name": "describe_entry",
        "description": (
            "Explain what something is before using it: a dataset (schema, size, where it came "
            "from), a tool (description and input schema) or a registered datasource (kind and "
            "tables). Unknown names get the closest real ones."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Dataset, tool or datasource name."},
                "kind": {"type": "string", "enum": ["any", "dataset", "tool", "datasource"], "default": "any"},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "category": "data",
        "handler_path": "tools.data.describe_entry",
        "status_message": "Looking it up",
        "timeout_seconds": 30,
    },
    {
        "name": "present_rows",
        "description": (
            "Show rows of a dataset to the user as a table in the chat (up to 200 rows). Use it "
            "when the user should see the rows themselves; you get a short preview back."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "dataset": _DATASET,
                "columns": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                            "description": "Columns to show, in order; default all."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                "title": {"type": "string", "maxLength": 200},
            },
            "additionalProperties": False,
        },
        "category": "data",
        "handler_path": "tools.data.present_rows",
        "status_message": "Preparing the table",
        "timeout_seconds": 30,
    },
    {
        "name": "query",
        "description": (
            "Run one read-only SQL SELECT (DuckDB dialect) over this conversation's datasets; "
            "each dataset is a table of the same name. Returns up to 500 rows; for more, "
            "aggregate or filter, or pass save_as to keep the result as a new dataset."
        ),
        "input_schema": _SQL_INPUT,
        "category": "data",
        "handler_path": "tools.sql.query",
        "status_message": "Running the query",
        "timeout_seconds": 60,
    },
    {
        "name": "query_frames",
        "description": (
            "Run one read-only SQL SELECT over the frames that tools produced in this "
            "conversation (query results saved with save_as, analyze_data outputs), not the "
            "uploads. Same rules and limits as query."
        ),
        "input_schema": _SQL_INPUT,
        "category": "data",
        "handler_path": "tools.sql.query_frames",
        "status_message": "Querying the frames",
        "timeout_seconds": 60,
    },
    {
        "name": "analyze_data",
        "description": (
            "Run pandas code over this conversation's datasets in a sandbox, for what SQL cannot "
            "do (reshaping, statistics, time series). `df` is the chosen dataset, `frames[name]` "
            "every dataset, `pd` and `np` are available; assign the answer to `result`. Put new "
            "DataFrames into `frames['new_name']` to keep them as datasets. No imports or files."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1, "description": "Python using df, frames, pd, np."},
                "dataset": _DATASET,
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        "category": "data",
        "handler_path": "tools.analysis.analyze_data",
        "status_message": "Analysing the data",
        "timeout_seconds": 60,
    },
]

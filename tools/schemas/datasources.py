"""Datasource tools: register external databases and files, query them read-only."""

_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,63}$", "description": "The datasource's name."}

TOOLS = [
    {
        "name": "register_datasource",
        "description": (
            "Register a database or file the conversation's tools may query read-only: a "
            "PostgreSQL database (host, port, database, user, password), an SQLite file, or a "
            "CSV/Parquet file in the tenant's uploads. Staff only. Checks the connection and lists "
            "the tables; the password is stored encrypted and never shown again."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "kind": {"type": "string", "enum": ["postgres", "sqlite", "csv", "parquet"]},
                "host": {"type": "string"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535, "default": 5432},
                "database": {"type": "string"},
                "user": {"type": "string"},
                "password": {"type": "string", "writeOnly": True, "description": "Stored encrypted; never echoed."},
                "path": {"type": "string", "description": "For sqlite, csv and parquet: the upload's name or path."},
            },
            "required": ["name", "kind"],
            "additionalProperties": False,
        },
        "category": "datasources",
        "handler_path": "tools.datasources.register_datasource",
        "status_message": "Registering the datasource",
        "timeout_seconds": 30,
    },
    {
        "name": "set_datasource_auth",
        "description": (
            "Set or replace the password of a registered datasource (staff only), then check "
            "that it connects. The password is stored encrypted and never shown."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"name": _NAME, "password": {"type": "string", "minLength": 1, "writeOnly": True}},
            "required": ["name", "password"],
            "additionalProperties": False,
        },
        "category": "datasources",
        "handler_path": "tools.datasources.set_datasource_auth",
        "status_message": "Updating the credentials",
        "timeout_seconds": 30,
    },
    {
        "name": "query_datasource",
        "description": (
            "Run one read-only SQL query on a registered datasource (its own SQL dialect) and get "
            "the rows (500 by default). Writes are refused by the database. Use describe_entry "
            "first to see its tables; save_as keeps a larger result as a conversation dataset."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "sql": {"type": "string", "minLength": 1},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 500},
                "save_as": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
            },
            "required": ["name", "sql"],
            "additionalProperties": False,
        },
        "category": "datasources",
        "handler_path": "tools.datasources.query_datasource",
        "status_message": "Querying the datasource",
        "timeout_seconds": 60,
    },
]

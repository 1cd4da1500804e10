"""Builder tools: ask for a new custom tool, and follow its build."""

TOOLS = [
    {
        "name": "build_custom_tool",
        "description": (
            "Ask for a new tool to be written when no existing tool (see search_tools) can do a task. "
            "Describe in plain words what it should take and return; a builder model writes it, an "
            "auditor tests it in a sandbox, and a staff member must approve it before anyone can call "
            "it. Returns a job id at once; follow it with tool_job_status. Needs staff or the "
            "registry.add_tooljob permission."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "pattern": "^[a-z][a-z0-9_]{2,63}$",
                    "description": "The new tool's name: lower_snake_case, 3-64 characters.",
                },
                "request": {
                    "type": "string",
                    "minLength": 10,
                    "maxLength": 4000,
                    "description": "What the tool should do, its inputs and its output.",
                },
            },
            "required": ["name", "request"],
            "additionalProperties": False,
        },
        "category": "builder",
        "handler_path": "tools.builder.build_custom_tool",
        "status_message": "Queueing a tool build",
        "timeout_seconds": 15,
    },
    {
        "name": "tool_job_status",
        "description": (
            "Check a tool build started with build_custom_tool: its status (queued, building, "
            "testing = awaiting staff review, approved, rejected, failed), progress and any error."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "job_id": {"type": "string", "minLength": 1, "maxLength": 32,
                           "description": "The job id build_custom_tool returned."},
            },
            "required": ["job_id"],
            "additionalProperties": False,
        },
        "category": "builder",
        "handler_path": "tools.builder.tool_job_status",
        "status_message": "Checking a tool build",
        "timeout_seconds": 10,
    },
]

"""Utility tools: finding tools and planning work."""

TOOLS = [
    {
        "name": "search_tools",
        "description": (
            "Find tools that can do something you cannot do with the tools you have now. "
            "Describe the task in plain words (for example 'send an email with an attachment' "
            "or 'convert a spreadsheet to a chart'). Returns the best matching tools with "
            "their input schemas; they become callable for the rest of this conversation."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "What you want to do, in plain words.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many tools to return (1-20, default 5).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.utility.search_tools",
        "status_message": "Searching tools",
        "inline": True,
    },
    {
        "name": "plan",
        "description": (
            "Write down or update the step-by-step plan for the current task, so progress is "
            "tracked across turns. Pass `steps` to set the whole plan, or `update` to change "
            "the status of one step. Returns the plan as it now stands."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the plan achieves."},
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "title": {"type": "string", "minLength": 1},
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "done", "skipped"],
                                "default": "pending",
                            },
                        },
                        "required": ["title"],
                        "additionalProperties": False,
                    },
                    "description": "The whole plan, in order. Replaces any earlier plan.",
                },
                "update": {
                    "type": "object",
                    "properties": {
                        "step": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "1-based step number.",
                        },
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "done", "skipped"],
                        },
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                    "description": "Change one step's status.",
                },
            },
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.utility.plan",
        "status_message": "Updating the plan",
        "inline": True,
    },
]

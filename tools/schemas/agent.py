"""Tools that use the model or the loop itself: call_llm, delegate, delegate_batch, request_user_input."""

TOOLS = [
    {
        "name": "call_llm",
        "description": (
            "Ask a language model for a one-off piece of text — a summary, a rewrite, a "
            "classification, a translation — without tools and without the conversation's history. "
            "Give everything it needs in `prompt`."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "minLength": 1, "description": "The whole request."},
                "system": {"type": "string", "description": "Optional instructions for the model."},
                "role": {"type": "string", "default": "chat", "description": "Which configured model role to use."},
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.agent.call_llm",
        "status_message": "Asking the model",
        "timeout_seconds": 600,
    },
    {
        "name": "delegate",
        "description": (
            "Hand a self-contained task to a helper agent that works with its own tools and "
            "reports back. Describe the task fully (it does not see this conversation) and what "
            "the answer should contain. Optionally cap what it may spend."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "task": {"type": "string", "minLength": 1},
                "max_cost_usd": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["task"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.agent.delegate",
        "status_message": "Delegating",
        "timeout_seconds": 1800,
    },
    {
        "name": "delegate_batch",
        "description": (
            "Hand several independent tasks to helper agents that work on them at the same time; "
            "returns each one's report. Use for parallel research or checks that do not depend on "
            "each other."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "tasks": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"type": "string", "minLength": 1}},
                "max_cost_usd_each": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["tasks"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.agent.delegate_batch",
        "status_message": "Delegating in parallel",
        "timeout_seconds": 1800,
    },
    {
        "name": "request_user_input",
        "description": (
            "Ask the user a question and wait for the answer, when you cannot go on without a "
            "decision or a fact only they have. Offer `choices` when the answer is one of a few."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1},
                "choices": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
            },
            "required": ["question"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.agent.request_user_input",
        "status_message": "Waiting for your answer",
        "timeout_seconds": 3600,
    },
]

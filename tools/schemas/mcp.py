"""MCP tools: finding and installing MCP servers from chat."""

TOOLS = [
    {
        "name": "search_mcp_marketplace",
        "description": (
            "Search for MCP servers that would give you new tools (for example 'github issues', "
            "'time zones', 'fetch web pages'). Returns matching servers from the bundled catalog "
            "and the MCP registry, each with its id and the exact command or URL it runs."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What the server should do."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "category": "mcp",
        "handler_path": "tools.mcp.search_mcp_marketplace",
        "status_message": "Searching the MCP marketplace",
        "timeout_seconds": 15,
    },
    {
        "name": "install_mcp_server",
        "description": (
            "Install an MCP server found with search_mcp_marketplace and connect it, so its tools "
            "become callable. Staff only. It does not install by itself: the person sees the exact "
            "command, package and version in the chat page and approves or rejects it there."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1, "description": "The server id from the search."},
                "name": {
                    "type": "string",
                    "pattern": "^[a-z0-9][a-z0-9_-]{0,31}$",
                    "description": "Connection name; its tools are called mcp_<name>_<tool>.",
                },
            },
            "required": ["id", "name"],
            "additionalProperties": False,
        },
        "category": "mcp",
        "handler_path": "tools.mcp.install_mcp_server",
        "status_message": "Installing an MCP server",
        "timeout_seconds": 60,
    },
]

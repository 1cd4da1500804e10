"""The web: fetching a page, searching."""

TOOLS = [
    {
        "name": "fetch_url",
        "description": (
            "Read a public web page (or a PDF/DOCX at a URL) as plain text. Only http and https; "
            "addresses inside private networks are refused. Use it to read a page you know the "
            "address of, e.g. one web_search returned."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"url": {"type": "string", "minLength": 8, "maxLength": 2000, "description": "http(s) URL."}},
            "required": ["url"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.web.fetch_url",
        "status_message": "Reading the web page",
        "large_output": True,
        "timeout_seconds": 60,
    },
    {
        "name": "web_search",
        "description": (
            "Search the web and get result titles, addresses and snippets; read a result with fetch_url."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.web.web_search",
        "status_message": "Searching the web",
        "replaced_by_model_capability": "web_search",
        "timeout_seconds": 30,
    },
]

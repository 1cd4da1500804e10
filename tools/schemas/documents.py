"""Generated documents: reports as Markdown, DOCX or PDF files the user downloads."""

_SECTION = {
    "type": "object",
    "properties": {
        "heading": {"type": "string"},
        "paragraphs": {"type": "array", "items": {"type": "string"}},
        "bullets": {"type": "array", "items": {"type": "string"}},
        "table": {
            "type": "object",
            "properties": {
                "columns": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "rows": {"type": "array", "items": {"type": "array"}},
            },
            "required": ["columns"],
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
_FORMAT = {"type": "string", "enum": ["pdf", "docx", "markdown"], "default": "pdf"}

TOOLS = [
    {
        "name": "generate_document",
        "description": (
            "Write a document the user can download (PDF, Word DOCX or Markdown) from an outline of "
            "sections (heading, paragraphs, bullets, a table), and/or from the results of this "
            "conversation's tool calls (include_results). Use it when the user asks for a report or file."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": 200},
                "format": _FORMAT,
                "sections": {"type": "array", "items": _SECTION},
                "include_results": {"type": "boolean", "default": False,
                                    "description": "Append every tool result of this conversation."},
            },
            "required": ["title"],
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.documents.generate_document",
        "status_message": "Writing the document",
        "timeout_seconds": 120,
    },
    {
        "name": "document_conversation",
        "description": (
            "Write a report of this conversation as a downloadable file: the questions and answers, "
            "each tool call with its result, and the charts and files produced."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 200}, "format": _FORMAT},
            "additionalProperties": False,
        },
        "category": "utility",
        "handler_path": "tools.documents.document_conversation",
        "status_message": "Writing the conversation report",
        "timeout_seconds": 120,
    },
]

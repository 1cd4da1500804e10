"""Document corpora: create, index, read, move and search documents."""

_CORPUS = {"type": "string", "minLength": 1, "description": "The corpus name (as given to create_corpus)."}

TOOLS = [
    {
        "name": "create_corpus",
        "description": (
            "Create a named collection (corpus) of documents to search later, e.g. 'contracts' or "
            "'product manuals'. Calling it again with an existing name just returns that corpus."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 120, "description": "A short unique name."},
                "description": {"type": "string", "description": "What the corpus holds."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "category": "search",
        "handler_path": "tools.corpora.create_corpus",
        "status_message": "Creating the corpus",
        "inline": True,
    },
    {
        "name": "index_content",
        "description": (
            "Add documents to a corpus so search_documents can find them: text, Markdown, HTML, PDF or "
            "DOCX, from the user's uploads (by file name), from files generated in the conversation "
            "(by file_id), or pasted text. Each item is split into passages and embedded; indexing an "
            "unchanged document again does nothing."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "corpus": _CORPUS,
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "upload": {"type": "string", "description": "File name in the user's uploads."},
                            "file_id": {"type": "integer", "description": "Id of a generated file."},
                            "text": {"type": "string", "minLength": 1, "description": "The document itself."},
                            "title": {"type": "string", "description": "Title (default: from the document)."},
                            "format": {"type": "string", "enum": ["text", "markdown", "html", "pdf", "docx"]},
                        },
                        "additionalProperties": False,
                    },
                    "description": "One object per document, each with exactly one of upload, file_id or text.",
                },
            },
            "required": ["corpus", "items"],
            "additionalProperties": False,
        },
        "category": "search",
        "handler_path": "tools.corpora.index_content",
        "status_message": "Indexing documents",
        "timeout_seconds": 600,
        "sequential": True,
    },
    {
        "name": "get_document_text",
        "description": "Read the whole text of one indexed document, by the document id search_documents shows.",
        "input_schema": {
            "type": "object",
            "properties": {"document_id": {"type": "integer", "minimum": 1}},
            "required": ["document_id"],
            "additionalProperties": False,
        },
        "category": "search",
        "handler_path": "tools.corpora.get_document_text",
        "status_message": "Reading the document",
        "large_output": True,
        "inline": True,
    },
    {
        "name": "move_documents",
        "description": "Move indexed documents (by id) into another corpus.",
        "input_schema": {
            "type": "object",
            "properties": {
                "document_ids": {"type": "array", "minItems": 1, "maxItems": 500, "items": {"type": "integer"}},
                "to_corpus": _CORPUS,
            },
            "required": ["document_ids", "to_corpus"],
            "additionalProperties": False,
        },
        "category": "search",
        "handler_path": "tools.corpora.move_documents",
        "status_message": "Moving documents",
        "inline": True,
    },
    {
        "name": "search_documents",
        "description": (
            "Search indexed documents by meaning and by words, and get the best passages with their "
            "sources. Use it before answering a question about the user's documents, and cite each "
            "claim in your answer with the passage id in brackets, e.g. 'Revenue grew 12% [p41].'"
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "The question or topic."},
                "corpora": {"type": "array", "items": _CORPUS, "description": "Only these corpora (default: all)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "category": "search",
        "handler_path": "tools.corpora.search_documents",
        "status_message": "Searching documents",
    },
]

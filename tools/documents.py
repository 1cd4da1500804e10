"""Handlers of the document tools: generate_document and document_conversation.

A generated document is written under the tenant's files directory and
returned as an export (the dispatcher turns it into a GeneratedFile row, an
``export`` event and a notification) plus a ``file_download`` card.
document_conversation composes: it builds an outline from the conversation's
rows and hands it to generate_document through the registry.
"""

from __future__ import annotations

import json
from typing import Any

from eunice import tenant_files as files
from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, uniform_contract
from registry.conversation_records import conversation_records
from registry.declarations import Tool
from registry.ports import ConversationFacts, LoggedEvent
from tools.lib.render_docs import MIME_TYPES, write_document

# Tool results worth a section of a report; bookkeeping calls are left out.
_SKIPPED_TOOLS = frozenset({"plan", "search_tools", "generate_document", "document_conversation"})


@uniform_contract(name="generate_document", is_tabular=False)
def generate_document(inputs: dict, context: ToolContext) -> Ok:
    """Write the outline (and optionally the conversation's results) as Markdown, DOCX or PDF."""
    fmt = inputs.get("format", "pdf")
    sections = list(inputs.get("sections", []))
    if inputs.get("include_results"):
        sections += results_sections(_conversation(context))
    if not sections:
        raise HintException("schema", "the document would be empty: pass `sections` or `include_results: true`")
    outline = {"title": inputs["title"], "sections": sections}
    extension, mime_type = MIME_TYPES[fmt]
    path, filename = files.new_generated_path(context.tenant_id, inputs["title"], extension)
    write_document(outline, fmt, path)
    size = path.stat().st_size
    export = {"path": str(path), "mime_type": mime_type, "size_bytes": size, "original_filename": filename}
    card = {
        "type": "file_download",
        "export": filename,
        "filename": filename,
        "mime_type": mime_type,
        "size_bytes": size,
        "title": inputs["title"],
    }
    return Ok(
        rows=1,
        data=f"Generated {filename} ({fmt}, {size:,} bytes, {len(sections)} section(s)); the user can download it.",
        effects=Effects(cards=[card], exports={filename: export}),
    )


@uniform_contract(name="document_conversation", is_tabular=False)
def document_conversation(inputs: dict, context: ToolContext) -> Ok:
    """A report of this conversation (questions, tool calls, results, charts), via generate_document."""
    conversation = _conversation(context)
    outline_sections = conversation_sections(conversation)
    title = inputs.get("title") or f"Conversation report: {conversation.title or conversation.id}"
    if context.registry is None:  # the registry sets itself on every call's context
        raise RuntimeError("document_conversation was called outside the registry")
    result = context.registry.execute_tool(
        "generate_document",
        {"title": title, "format": inputs.get("format", "pdf"), "sections": outline_sections},
        context,
    )
    if result.error is not None:
        raise RuntimeError(f"generate_document failed: {result.error}")
    return Ok(
        rows=1, data=result.content.split("\n", 1)[-1], effects=Effects(cards=result.cards, exports=result.exports)
    )


def _conversation(context: ToolContext) -> ConversationFacts:
    conversation_id = context.conversation_id
    conversation = conversation_records().find(context.tenant_id, conversation_id) if conversation_id else None
    if conversation is None:
        raise HintException("schema", "there is no conversation to report on here; pass `sections` instead")
    return conversation


def conversation_sections(conversation: ConversationFacts) -> list[dict]:
    """Questions and answers, then every tool call with its result, then charts and files."""
    records = conversation_records()
    messages = records.messages(conversation.id)
    exchange = [f"{'Question' if m.role == 'user' else 'Answer'}: {m.text}" for m in messages if m.text]
    sections: list[dict[str, Any]] = [
        {"heading": "Questions and answers", "paragraphs": exchange or ["(no messages yet)"]}
    ]
    events = records.events(conversation.id, ["tool_call", "tool_result", "card", "export"])
    calls = {d.get("tool_use_id"): d for d in (e.data for e in events if e.event_type == "tool_call")}
    rows = []
    for event in (e for e in events if e.event_type == "tool_result"):
        data = event.data
        call = calls.get(data.get("tool_use_id"), {})
        rows.append(
            [
                data.get("name", ""),
                json.dumps(call.get("input", {}), ensure_ascii=False),
                "error" if data.get("error") else "ok",
            ]
        )
    if rows:
        sections.append({"heading": "Tool calls", "table": {"columns": ["tool", "input", "outcome"], "rows": rows}})
    sections += results_sections(conversation, events)
    charts = [e.data.get("card", {}) for e in events if e.event_type == "card"]
    charts = [c for c in charts if c.get("type") in ("chart", "map_display", "image")]
    if charts:
        sections.append(
            {
                "heading": "Charts",
                "bullets": [f"{c.get('type')}: {c.get('title') or c.get('display_id') or ''}" for c in charts],
            }
        )
    exports = [e.data for e in events if e.event_type == "export"]
    if exports:
        sections.append(
            {"heading": "Files", "bullets": [f"{x.get('filename')} (from {x.get('source_tool')})" for x in exports]}
        )
    return sections


def results_sections(conversation: ConversationFacts, events: list[LoggedEvent] | None = None) -> list[dict]:
    """One section per successful tool result of the conversation, its text whole."""
    if events is None:
        events = conversation_records().events(conversation.id, ["tool_result"])
    sections = []
    for event in events:
        data = event.data
        if event.event_type != "tool_result" or data.get("error") or data.get("name") in _SKIPPED_TOOLS:
            continue
        sections.append({"heading": f"Result of {data.get('name')}", "paragraphs": [str(data.get("content", ""))]})
    return sections


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

TOOLS = (
    Tool(
        name="generate_document",
        description=(
            "Write a document the user can download (PDF, Word DOCX or Markdown) from an outline of "
            "sections (heading, paragraphs, bullets, a table), and/or from the results of this "
            "conversation's tool calls (include_results). Use it when the user asks for a report or file."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1, "maxLength": 200},
                "format": _FORMAT,
                "sections": {"type": "array", "items": _SECTION},
                "include_results": {
                    "type": "boolean",
                    "default": False,
                    "description": "Append every tool result of this conversation.",
                },
            },
            "required": ["title"],
            "additionalProperties": False,
        },
        handler=generate_document,
        category="utility",
        status_message="Writing the document",
        timeout_seconds=120,
    ),
    Tool(
        name="document_conversation",
        description=(
            "Write a report of this conversation as a downloadable file: the questions and answers, "
            "each tool call with its result, and the charts and files produced."
        ),
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 200}, "format": _FORMAT},
            "additionalProperties": False,
        },
        handler=document_conversation,
        category="utility",
        status_message="Writing the conversation report",
        timeout_seconds=120,
    ),
)

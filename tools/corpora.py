"""Handlers of the corpus tools: create_corpus, index_content, get_document_text,
move_documents and search_documents.

Source-decorated (``@uniform_contract``): they return ``Ok`` and raise
``HintException`` for anything the model can correct (an unknown corpus or
document, a missing upload, a query nothing matches).
"""

from __future__ import annotations

import difflib

from django.db.models import Q

from datacatalog.access import caller_user
from registry.cards import CardType
from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, uniform_contract
from registry.declarations import Tool
from tools.lib.passages import readable_documents, search_passages, store_document
from tools.lib.sources import load_item
from tools.models import Corpus, Document


@uniform_contract(name="create_corpus", is_tabular=False)
def create_corpus(inputs: dict, context: ToolContext) -> Ok:
    """Create a named corpus for the tenant (or return the existing one of that name)."""
    name = inputs["name"].strip()
    if not name:
        raise HintException("schema", "name: must not be blank")
    corpus, created = Corpus.objects.get_or_create(
        tenant_id=context.tenant_id,
        name=name,
        defaults={"description": inputs.get("description", ""), "created_by": str(context.user_id or "")},
    )
    count = readable_documents(context).filter(corpus=corpus).count()
    verb = "Created" if created else "Already exists:"
    return Ok(rows=1, data=f"{verb} corpus {corpus.name!r} (id {corpus.pk}, {count} document(s)).")


@uniform_contract(name="index_content", is_tabular=False)
def index_content(inputs: dict, context: ToolContext) -> Ok:
    """Extract, chunk, embed and store each item in the corpus; unchanged items cost nothing."""
    tenant_id = context.tenant_id
    corpus = resolve_corpus(tenant_id, inputs["corpus"])
    conversation_id = str(context.conversation_id or "")
    loaded = [load_item(item, context) for item in inputs["items"]]
    owner = caller_user(context)
    lines = []
    for document_input in loaded:
        document, status = store_document(
            corpus,
            document_input,
            owner=owner,
            conversation_id=conversation_id,
            tool_call_id=str(context.tool_use_id or ""),
        )
        passages = document.chunks.count()
        lines.append(
            f"- document {document.pk} {document.title!r} ({document.format}): {status}, {passages} passage(s)"
        )
    header = f"Corpus {corpus.name!r}: {len(loaded)} item(s)."
    return Ok(rows=len(loaded), data="\n".join([header, *lines]))


@uniform_contract(name="get_document_text", is_tabular=False)
def get_document_text(inputs: dict, context: ToolContext) -> Ok:
    """The whole extracted text of one document (never cut)."""
    document = resolve_document(context, inputs["document_id"])
    header = f"Document {document.pk} {document.title!r} in corpus {document.corpus.name!r} ({document.source}):"
    return Ok(rows=1, data=f"{header}\n\n{document.text}")


@uniform_contract(name="move_documents", is_tabular=False)
def move_documents(inputs: dict, context: ToolContext) -> Ok:
    """Move documents (by id) into another corpus of the same tenant."""
    tenant_id = context.tenant_id
    target = resolve_corpus(tenant_id, inputs["to_corpus"])
    documents = [resolve_document(context, pk) for pk in dict.fromkeys(inputs["document_ids"])]
    # A corpus holds one document per source and owner (tools.models.Document).
    same = Q(pk__in=[])
    for d in documents:
        same |= Q(source=d.source, owner=d.owner_id) if d.owner_id else Q(source=d.source, owner__isnull=True)
    clashes = Document.objects.filter(same, corpus=target).exclude(pk__in=[d.pk for d in documents])
    clash = clashes.first()
    if clash is not None:
        raise HintException(
            "ambiguous",
            f"corpus {target.name!r} already holds document {clash.pk} from the same source ({clash.source})",
            [{"label": f"leave document {clash.pk} where it is", "score": 0.5}],
        )
    Document.objects.filter(pk__in=[d.pk for d in documents]).update(corpus=target)
    moved = ", ".join(f"{d.pk} {d.title!r}" for d in documents)
    return Ok(rows=len(documents), data=f"Moved {len(documents)} document(s) to {target.name!r}: {moved}.")


@uniform_contract(name="search_documents", is_tabular=False)
def search_documents(inputs: dict, context: ToolContext) -> Ok:
    """Hybrid (lexical + dense) passage search; passages are labelled for citation."""
    tenant_id = context.tenant_id
    names = inputs.get("corpora")
    documents = readable_documents(context)
    if names:
        documents = documents.filter(corpus__in=[resolve_corpus(tenant_id, name) for name in names])
    if not documents.exists():
        raise HintException(
            "fetch",
            "there are no documents to search yet",
            add="index documents first with index_content (create_corpus makes a corpus)",
        )
    hits = search_passages(documents, inputs["query"], inputs.get("limit", 5))
    if not hits:
        raise HintException(
            "fetch",
            f"no passage matches {inputs['query']!r}",
            narrow="ask with words the documents would use, or search every corpus",
        )
    lines = [
        f"{len(hits)} passage(s) for {inputs['query']!r}. Cite each claim with its passage id, e.g. [{hits[0].label}]."
    ]
    for hit in hits:
        document = hit.chunk.document
        where = f"document {document.pk}, corpus {document.corpus.name!r}"
        lines.append(f"\n[{hit.label}] {document.title} — {document.source} ({where})")
        lines.append(hit.chunk.text)
    card = {
        "type": CardType.DOCUMENT_PASSAGES,
        "query": inputs["query"],
        "passages": [hit.as_card_entry() for hit in hits],
    }
    return Ok(rows=len(hits), data="\n".join(lines), effects=Effects(cards=[card]))


def resolve_corpus(tenant_id: str, name: str) -> Corpus:
    """The tenant's corpus called ``name`` (or with that id). Raises HintException with the closest names."""
    corpora = Corpus.objects.for_tenant(tenant_id)
    found = corpora.filter(name=name).first() or (corpora.filter(pk=int(name)).first() if str(name).isdigit() else None)
    if found is not None:
        return found
    known = list(corpora.values_list("name", flat=True))
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.0) if known else []
    alternatives = [{"label": c, "score": round(difflib.SequenceMatcher(None, name, c).ratio(), 3)} for c in close]
    raise HintException(
        "schema", f"corpus {name!r} does not exist" + ("" if known else "; create it with create_corpus"), alternatives
    )


def resolve_document(context: ToolContext, document_id: int) -> Document:
    """Document ``document_id``, if the caller may read it (``readable_documents``).
    Raises HintException listing the caller's recent documents."""
    readable = readable_documents(context)
    document = readable.select_related("corpus").filter(pk=document_id).first()
    if document is not None:
        return document
    recent = readable.order_by("-updated_at")[:5]
    alternatives = [{"label": f"document {d.pk}: {d.title}", "score": 0.5} for d in recent]
    raise HintException("schema", f"document_id {document_id} is not one of your documents", alternatives)


_CORPUS = {"type": "string", "minLength": 1, "description": "The corpus name (as given to create_corpus)."}

TOOLS = (
    Tool(
        name="create_corpus",
        description=(
            "Create a named collection (corpus) of documents to search later, e.g. 'contracts' or "
            "'product manuals'. Calling it again with an existing name just returns that corpus."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 120, "description": "A short unique name."},
                "description": {"type": "string", "description": "What the corpus holds."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=create_corpus,
        category="search",
        status_message="Creating the corpus",
        inline=True,
    ),
    Tool(
        name="index_content",
        description=(
            "Add documents to a corpus so search_documents can find them: text, Markdown, HTML, PDF or "
            "DOCX, from the user's uploads (by file name), from files generated in the conversation "
            "(by file_id), or pasted text. Each item is split into passages and embedded; indexing an "
            "unchanged document again does nothing."
        ),
        input_schema={
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
        handler=index_content,
        category="search",
        status_message="Indexing documents",
        timeout_seconds=600,
        sequential=True,
    ),
    Tool(
        name="get_document_text",
        description="Read the whole text of one indexed document, by the document id search_documents shows.",
        input_schema={
            "type": "object",
            "properties": {"document_id": {"type": "integer", "minimum": 1}},
            "required": ["document_id"],
            "additionalProperties": False,
        },
        handler=get_document_text,
        category="search",
        status_message="Reading the document",
        large_output=True,
        inline=True,
    ),
    Tool(
        name="move_documents",
        description="Move indexed documents (by id) into another corpus.",
        input_schema={
            "type": "object",
            "properties": {
                "document_ids": {"type": "array", "minItems": 1, "maxItems": 500, "items": {"type": "integer"}},
                "to_corpus": _CORPUS,
            },
            "required": ["document_ids", "to_corpus"],
            "additionalProperties": False,
        },
        handler=move_documents,
        category="search",
        status_message="Moving documents",
        inline=True,
    ),
    Tool(
        name="search_documents",
        description=(
            "Search indexed documents by meaning and by words, and get the best passages with their "
            "sources. Use it before answering a question about the user's documents, and cite each "
            "claim in your answer with the passage id in brackets, e.g. 'Revenue grew 12% [p41].'"
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "The question or topic."},
                "corpora": {"type": "array", "items": _CORPUS, "description": "Only these corpora (default: all)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=search_documents,
        category="search",
        status_message="Searching documents",
    ),
)

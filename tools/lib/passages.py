"""Store a document's passages with their vectors, and find passages for a query."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Max, QuerySet

from registry.context import ToolContext
from tools.lib.chunking import chunk_text
from tools.lib.hybrid import MIN_SIMILARITY, IndexCache, as_document, build_index, embed_missing
from tools.lib.sources import LoadedDocument
from tools.models import Chunk, Corpus, Document

_INDEXES = IndexCache()


def passage_label(chunk_id: int) -> str:
    """How a passage is cited in an answer: ``p`` and its id, e.g. ``p12``."""
    return f"p{chunk_id}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def readable_documents(context: ToolContext) -> QuerySet:
    """The documents of the caller's tenant they may read, search, move or replace: those they
    indexed and those indexed by no user (the tenant's); staff: all of the tenant's.
    The same rule as for files (datacatalog.access.owned_rows)."""
    from datacatalog.access import owned_rows

    return owned_rows(Document.objects.for_tenant(context.tenant_id), context, "owner")


def store_document(
    corpus: Corpus, loaded: LoadedDocument, *, owner: object = None, conversation_id: str = "", tool_call_id: str = ""
) -> tuple[Document, str]:
    """Insert or replace ``owner``'s document of ``loaded.source`` in ``corpus``; ``(document, status)``.

    Status is ``unchanged`` (same text: nothing is done), ``replaced`` or
    ``indexed``. Only the owner's own document of that source is replaced (None:
    the tenant's): a colleague indexing the same source gets a document of their
    own. Passages are embedded before the transaction opens, so the write is
    short. Raises EmbedderUnavailable if the model cannot load.
    """
    digest = content_hash(loaded.text)
    existing = Document.objects.filter(corpus=corpus, source=loaded.source, owner=owner).first()
    if existing is not None and existing.content_hash == digest and existing.title == loaded.title:
        return existing, "unchanged"
    passages = chunk_text(loaded.text)
    documents = [as_document(n, loaded.title, text) for n, text in enumerate(passages)]
    _, fresh = embed_missing(documents, {})
    with transaction.atomic():
        if existing is not None:
            existing.chunks.all().delete()
            document, status = existing, "replaced"
            document.title, document.format, document.text = loaded.title, loaded.format, loaded.text
            document.content_hash, document.tool_call_id = digest, tool_call_id
            document.conversation_id = conversation_id or ""
            document.save()
        else:
            document, status = (
                Document.objects.create(
                    tenant_id=corpus.tenant_id,
                    corpus=corpus,
                    title=loaded.title,
                    source=loaded.source,
                    format=loaded.format,
                    content_hash=digest,
                    text=loaded.text,
                    owner=owner,
                    conversation_id=conversation_id or "",
                    tool_call_id=tool_call_id,
                ),
                "indexed",
            )
        Chunk.objects.bulk_create(
            [
                Chunk(
                    tenant_id=corpus.tenant_id,
                    document=document,
                    position=n,
                    text=text,
                    embedding=fresh[str(n)][0],
                    embedding_model=fresh[str(n)][1],
                )
                for n, text in enumerate(passages)
            ]
        )
    return document, status


@dataclass(frozen=True)
class PassageHit:
    chunk: Chunk
    score: float

    @property
    def label(self) -> str:
        return passage_label(self.chunk.pk)

    def as_card_entry(self) -> dict:
        document = self.chunk.document
        return {
            "id": self.label,
            "document_id": document.pk,
            "title": document.title,
            "source": document.source,
            "corpus": document.corpus.name,
            "position": self.chunk.position,
            "text": self.chunk.text,
            "score": round(self.score, 4),
        }


def search_passages(documents: QuerySet, query: str, limit: int) -> list[PassageHit]:
    """The ``limit`` best passages of ``documents`` (of one tenant: ``readable_documents``,
    perhaps cut to some corpora), best first.

    The index holds the whole tenant's passages (built once per change); only
    those of ``documents`` may be found. Passages sharing no word with the query
    and further in meaning than the tool-search threshold are left out, so an
    unrelated query finds nothing.
    """
    tenant_id = documents.values_list("tenant_id", flat=True).first()
    if tenant_id is None:
        return []
    index = _tenant_index(tenant_id)
    ids = Chunk.objects.for_tenant(tenant_id).filter(document__in=documents).values_list("id", flat=True)
    allowed = {str(i) for i in ids}
    if len(index) == 0 or not allowed:
        return []
    hits = index.search(query, limit, allowed, min_similarity=MIN_SIMILARITY, scope=tenant_id)
    chunks = (
        Chunk.objects.for_tenant(tenant_id).select_related("document__corpus").in_bulk([int(hit.key) for hit in hits])
    )
    return [PassageHit(chunks[int(hit.key)], hit.score) for hit in hits if int(hit.key) in chunks]


def _tenant_index(tenant_id: str):
    rows = Chunk.objects.for_tenant(tenant_id)
    fingerprint = tuple(rows.aggregate(n=Count("id"), last=Max("id")).values())
    return _INDEXES.get(tenant_id, fingerprint, lambda: _build(tenant_id))


def _build(tenant_id: str):
    rows = list(
        Chunk.objects.for_tenant(tenant_id).values_list("id", "document__title", "text", "embedding", "embedding_model")
    )
    documents = [as_document(pk, title, text) for pk, title, text, _, _ in rows]
    stored = {str(pk): (blob, tag) for pk, _, _, blob, tag in rows}
    vectors, fresh = embed_missing(documents, stored)
    for key, (blob, tag) in fresh.items():  # a model change: store the new vectors for every process
        Chunk.objects.filter(pk=int(key)).update(embedding=blob, embedding_model=tag)
    return build_index(documents, vectors)


def clear_cache() -> None:
    _INDEXES.clear()

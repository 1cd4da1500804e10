"""The pieces of text the pattern tools count and group: a dataset's rows or a corpus's passages.

Rows come from the conversation's catalog; passages only from documents the
caller may read (``readable_documents``), so a count or a cluster never rests on
another tenant's (or another member's private) text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry.context import ToolContext
from registry.contract import HintException
from tools.datacommon import check_columns, chosen_dataset

# Characters of a document that stand for it when documents are grouped by meaning.
DOCUMENT_HEAD = 2000

if TYPE_CHECKING:
    import pandas as pd
    from django.db.models import QuerySet

    from datacatalog.store import ConversationCatalog
    from tools.models import Corpus


@dataclass
class Units:
    """Texts with a label each (a row number or a document's title), and where they came from."""

    source: str
    labels: list[str]
    texts: list[str]


def dataset_text(context: ToolContext, inputs: dict) -> tuple[ConversationCatalog, str, pd.DataFrame, Units]:
    """The chosen dataset and, one unit per row, its ``columns`` (default: its text columns) joined.

    Raises a Hint naming ``columns`` for unknown columns or a dataset without text.
    """
    books, name, frame = chosen_dataset(context, inputs)
    columns = inputs.get("columns") or [str(c) for c in frame.columns if is_text(frame[c])]
    if not columns:
        raise HintException("schema", f"columns: dataset {name!r} has no text columns; name the columns to read")
    check_columns(frame, columns, "columns")
    texts = joined_text(frame, columns)
    labels = [str(n) for n in range(len(frame))]
    return books, name, frame, Units(f"dataset {name!r} ({', '.join(columns)})", labels, texts)


def joined_text(frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """Each row's ``columns`` as one text, missing values left out."""
    return frame[columns].astype("string").fillna("").agg(" ".join, axis=1).tolist()


def only_one_source(inputs: dict) -> None:
    """Raise a Hint naming ``corpus`` when both a corpus and a dataset (or its columns) are given."""
    if inputs.get("corpus") and (inputs.get("dataset") or inputs.get("columns")):
        raise HintException("schema", "corpus: pass either a corpus or a dataset (with columns), not both")


def is_text(series: pd.Series) -> bool:
    import pandas as pd

    return series.dtype.kind in "OSU" or bool(pd.api.types.is_string_dtype(series))


def corpus_passages(context: ToolContext, corpus_name: str, limit: int) -> Units:
    """The passages of the corpus's documents the caller may read, in document order.

    Raises a Hint for an unknown corpus, an empty one, or one past ``limit`` passages.
    """
    from tools.models import Chunk

    corpus, documents = _readable_corpus(context, corpus_name)
    chunks = Chunk.objects.for_tenant(context.tenant_id).filter(document__in=documents)
    _check_count(corpus.name, chunks.count(), limit, "passages")
    rows = list(chunks.select_related("document").order_by("document_id", "position"))
    labels = [f"{chunk.document.title} #{chunk.position}" for chunk in rows]
    return Units(f"corpus {corpus.name!r}", labels, [chunk.text for chunk in rows])


def _readable_corpus(context: ToolContext, corpus_name: str) -> tuple[Corpus, QuerySet]:
    """The tenant's corpus of that name and its documents the caller may read. Raises a Hint if unknown."""
    from tools.corpora import resolve_corpus
    from tools.lib.passages import readable_documents

    corpus = resolve_corpus(context.tenant_id, corpus_name)
    return corpus, readable_documents(context).filter(corpus=corpus)


def _check_count(corpus: str, count: int, limit: int, what: str) -> None:
    if count == 0:
        raise HintException("schema", f"corpus: {corpus!r} has no documents you can read; index_content first")
    if count > limit:
        raise HintException("schema", f"corpus: {corpus!r} has {count:,} {what}, more than {limit:,} at once")


def corpus_documents(context: ToolContext, corpus_name: str, limit: int) -> Units:
    """The corpus's documents the caller may read, each as its title and the start of its text.

    Raises a Hint for an unknown corpus, an empty one, or one past ``limit`` documents.
    """
    from django.db.models.functions import Substr

    corpus, documents = _readable_corpus(context, corpus_name)
    _check_count(corpus.name, documents.count(), limit, "documents")
    rows = documents.defer("text").annotate(head=Substr("text", 1, DOCUMENT_HEAD)).order_by("id")
    return Units(f"corpus {corpus.name!r}", [row.title for row in rows], [f"{row.title}. {row.head}" for row in rows])

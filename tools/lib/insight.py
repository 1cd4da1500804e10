"""What the insight tools send a model and what they accept back.

A document is read as numbered passages: an indexed document's stored passages,
labelled as search_documents labels them (``p<ID>``), or, for an upload or pasted
text, the same chunking labelled ``s1``, ``s2``, … The model must cite passages by
those labels; the reply schemas list them, so a made-up label fails validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.cards import CardType
from registry.contract import HintException
from tools.lib.chunking import chunk_text
from tools.lib.passages import passage_label
from tools.lib.sources import LoadedDocument
from tools.models import Document

# What one call may send of a document; later passages are left out, with a warning.
MAX_DOCUMENT_CHARS = 60_000
# How much of a cited passage a card quotes.
QUOTE_CHARS = 300


@dataclass(frozen=True)
class Passage:
    label: str
    text: str


@dataclass(frozen=True)
class Source:
    """A document as the model reads it: its passages, those left out counted."""

    title: str
    document_id: int | None
    passages: tuple[Passage, ...]
    left_out: int = 0

    @property
    def labels(self) -> list[str]:
        return [p.label for p in self.passages]

    def as_prompt(self) -> str:
        body = "\n\n".join(f"[{p.label}] {p.text}" for p in self.passages)
        return f"Document: {self.title}\n\n{body}"

    def as_card(self) -> dict[str, Any]:
        return {"id": self.document_id, "title": self.title}

    def quotes(self, labels: list[str]) -> list[dict[str, str]]:
        """The cited passages, each with the start of its text."""
        by_label = {p.label: p.text for p in self.passages}
        return [{"id": label, "text": _quote(by_label.get(label, ""))} for label in labels]


def document_source(document: Document) -> Source:
    """An indexed document, read as its stored passages."""
    chunks = document.chunks.order_by("position").values_list("id", "text")
    return bounded(document.title, document.pk, [Passage(passage_label(pk), text) for pk, text in chunks])


def loaded_source(loaded: LoadedDocument) -> Source:
    """An upload or pasted text, cut into passages as index_content would cut it."""
    passages = [Passage(f"s{n}", text) for n, text in enumerate(chunk_text(loaded.text), 1)]
    return bounded(loaded.title, None, passages)


def bounded(title: str, document_id: int | None, passages: list[Passage]) -> Source:
    """The passages that fit MAX_DOCUMENT_CHARS, the others counted. Raises HintException for no text."""
    if not passages:
        raise HintException("schema", f"the document {title!r} has no text to read")
    kept: list[Passage] = []
    used = 0
    for passage in passages:
        used += len(passage.text) + len(passage.label) + 4
        if kept and used > MAX_DOCUMENT_CHARS:
            break
        kept.append(passage)
    return Source(title, document_id, tuple(kept), len(passages) - len(kept))


def _quote(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _citations(labels: list[str]) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "items": {"enum": labels}}


# --- classification -------------------------------------------------------------------


def classification_schema(labels: list[str], multi_label: bool, passages: list[str]) -> dict[str, Any]:
    """The reply a classification must be: the chosen labels, each with a confidence and citations."""
    return {
        "type": "object",
        "properties": {
            "labels": {
                "type": "array",
                "minItems": 1,
                "maxItems": len(labels) if multi_label else 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "label": {"enum": labels},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "reason": {"type": "string", "maxLength": 1000},
                        "citations": _citations(passages),
                    },
                    "required": ["label", "confidence", "reason", "citations"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["labels"],
        "additionalProperties": False,
    }


def classification_check(data: dict[str, Any]) -> list[str]:
    """What the schema cannot say: no label chosen twice."""
    chosen = [entry["label"] for entry in data["labels"]]
    twice = sorted({label for label in chosen if chosen.count(label) > 1})
    return [f"at labels: {label!r} is given more than once" for label in twice]


def classification_prompt(source: Source, labels: list[dict[str, Any]], multi_label: bool) -> str:
    listed = "\n".join(f"- {entry['label']}: {entry.get('description') or '(no description)'}" for entry in labels)
    how = "every label that applies" if multi_label else "the one label that fits best"
    return (
        f"Classify the document below. Choose {how} from this list:\n{listed}\n\n"
        "For each label you choose give a confidence between 0 and 1, a one-sentence reason, and the "
        "labels of the passages (e.g. p12 or s3) that support it.\n\n" + source.as_prompt()
    )


def classification_card(source: Source, data: dict[str, Any], taxonomy: dict[str, Any] | None, model: str) -> dict:
    ranked = sorted(data["labels"], key=lambda entry: -entry["confidence"])
    return {
        "type": CardType.CLASSIFICATION_RESULT,
        "document": source.as_card(),
        "taxonomy": taxonomy,
        "labels": [
            {
                "label": entry["label"],
                "confidence": entry["confidence"],
                "reason": entry["reason"],
                "citations": source.quotes(entry["citations"]),
            }
            for entry in ranked
        ],
        "model": model,
    }


# --- extraction -----------------------------------------------------------------------


def extraction_schema(values: dict[str, Any], passages: list[str]) -> dict[str, Any]:
    """The reply an extraction must be: values fitting ``values`` and the passages each came from.

    ``values``'s own definitions move to the root, where its ``#/$defs/…`` references point.
    """
    fields = list(values.get("properties", {}))
    definitions: dict[str, Any] = {key: values[key] for key in ("$defs", "definitions") if key in values}
    return {
        **definitions,
        "type": "object",
        "properties": {
            "values": values,
            "citations": {
                "type": "object",
                "propertyNames": {"enum": fields},
                "additionalProperties": _citations(passages),
            },
        },
        "required": ["values", "citations"],
        "additionalProperties": False,
    }


def extraction_check(data: dict[str, Any]) -> list[str]:
    """What the schema cannot say: every value found cites the passages it came from."""
    cited = data["citations"]
    return [
        f"at citations: the value of {name!r} cites no passage"
        for name, value in data["values"].items()
        if value not in (None, "", []) and not cited.get(name)
    ]


def extraction_prompt(source: Source, description: str) -> str:
    about = f"What to extract: {description}\n" if description else ""
    return (
        f"Extract the fields of the JSON Schema from the document below.\n{about}"
        "Use null for a field the document does not give; never guess. In `citations`, list for each "
        "field you filled the labels of the passages (e.g. p12 or s3) it comes from.\n\n" + source.as_prompt()
    )


def extraction_card(source: Source, data: dict[str, Any], schema: dict[str, Any] | None, model: str) -> dict:
    return {
        "type": CardType.EXTRACTION_RESULT,
        "document": source.as_card(),
        "schema": schema,
        "fields": [
            {"name": name, "value": value, "citations": source.quotes(data["citations"].get(name, []))}
            for name, value in data["values"].items()
        ],
        "model": model,
    }

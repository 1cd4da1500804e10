"""Handlers of the document insight tools: create_schema, create_taxonomy, classify_document,
extract_document and process_document.

A schema (what to extract) and a taxonomy (what to classify into) are named,
versioned rows of the tenant (``InsightDefinition``). Classifying and extracting
ask the ``insight`` role's model (it falls back to chat's) for JSON that fits a
schema built for the call, with citations limited to the document's passage
labels (tools.lib.insight); a reply that does not fit gets one repair try, then
the call ends in an Err (tools.lib.structured_llm). The model's cost rides on the
result, where the registry charges it to the tool, the tenant and the user.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import IntegrityError, transaction

from registry.context import ToolContext
from registry.contract import Effects, Err, HintException, Ok, Warning, uniform_contract
from registry.declarations import Tool
from registry.usage import charge_failure
from tools.lib import insight
from tools.lib.closest import not_found
from tools.lib.insight import Source
from tools.lib.sources import load_item
from tools.lib.structured_llm import Check, ModelUnavailable, StructuredReply, StructuredReplyError, ask_structured
from tools.models import InsightDefinition, InsightKind

ROLE = "insight"
SYSTEM = (
    "You read business documents and answer with structured data. You only state what the document "
    "says, and you cite the passages you took it from by their labels."
)
MAX_SCHEMA_CHARS = 20_000
MAX_FIELDS = 100
FIELD_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "format": "date", "description": "ISO 8601, YYYY-MM-DD"},
    "list": {"type": "array", "items": {"type": "string"}},
}


class CallFailed(Exception):
    """The model could not be asked, or its replies did not fit; carries the Err and what it cost."""

    def __init__(self, err: Err, cost: float = 0.0) -> None:
        super().__init__(err.message)
        self.err, self.cost = err, cost

    def charged(self, context: ToolContext, tool: str, spent_before: float = 0.0) -> Err:
        """The Err to return, once what the call spent is written to the usage log."""
        charge_failure(context, tool, spent_before + self.cost)
        return self.err


# --- definitions ----------------------------------------------------------------------


@uniform_contract(name="create_schema", is_tabular=False)
def create_schema(inputs: dict, context: ToolContext) -> Ok:
    """Save a named extraction schema (from simple fields or a JSON Schema); a change adds a version."""
    schema = _schema_from(inputs)
    row, status = _save(context, InsightKind.SCHEMA, inputs["name"], schema, inputs.get("description", ""))
    fields = ", ".join(schema["properties"])
    return Ok(rows=1, data=f"Schema {row.name!r} version {row.version} ({status}); fields: {fields}.")


@uniform_contract(name="create_taxonomy", is_tabular=False)
def create_taxonomy(inputs: dict, context: ToolContext) -> Ok:
    """Save a named taxonomy of labels; a label may name the schema process_document extracts with."""
    labels = [{key: entry[key].strip() for key in entry} for entry in inputs["labels"]]
    _check_labels([entry["label"] for entry in labels])
    for entry in labels:
        if entry.get("schema"):
            _definition(context, InsightKind.SCHEMA, entry["schema"])
    definition = {"labels": labels, "multi_label": inputs.get("multi_label", False)}
    row, status = _save(context, InsightKind.TAXONOMY, inputs["name"], definition, inputs.get("description", ""))
    listed = ", ".join(entry["label"] for entry in labels)
    return Ok(rows=len(labels), data=f"Taxonomy {row.name!r} version {row.version} ({status}); labels: {listed}.")


def _schema_from(inputs: dict) -> dict[str, Any]:
    """The JSON Schema the call gives (``json_schema``) or describes (``fields``). Raises HintException."""
    if ("fields" in inputs) == ("json_schema" in inputs):
        raise HintException("schema", "give exactly one of fields (a simple list) or json_schema")
    if "fields" in inputs:
        return _schema_of_fields(inputs["fields"])
    return checked_schema(inputs["json_schema"])


def _schema_of_fields(fields: list[dict]) -> dict[str, Any]:
    names = [field["name"] for field in fields]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise HintException("schema", f"fields: {', '.join(twice)} given more than once; give each field once")
    properties = {}
    for field in fields:
        kind = dict(FIELD_TYPES[field.get("type", "string")])
        if field.get("enum"):
            kind["enum"] = field["enum"]
        if not field.get("required", False):  # not in the document: null
            kind = {"anyOf": [kind, {"type": "null"}]}
        if field.get("description"):
            kind["description"] = field["description"]
        properties[field["name"]] = kind
    return {"type": "object", "properties": properties, "required": names, "additionalProperties": False}


def checked_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` if it is a JSON Schema of an object with fields, small, with local references only.
    Raises HintException naming the rule it breaks."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        raise HintException("schema", f"json_schema: at most {MAX_SCHEMA_CHARS:,} characters of JSON")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "the top level"
        raise HintException("schema", f"json_schema is not a valid JSON Schema at {where}: {exc.message}") from None
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
        raise HintException("schema", 'json_schema: must be {"type": "object", "properties": {...}} with a field')
    if len(properties) > MAX_FIELDS:
        raise HintException("schema", f"json_schema: at most {MAX_FIELDS} fields, not {len(properties)}")
    # Only references into the schema's own definitions, which extraction_schema keeps at the root.
    references = re.findall(r'"\$ref":\s*"((?:[^"\\]|\\.)*)"', json.dumps(schema))
    outside = sorted({ref for ref in references if not ref.startswith(("#/$defs/", "#/definitions/"))})
    if outside:
        raise HintException(
            "schema", f"json_schema: $ref may only point into #/$defs/ or #/definitions/, not {outside[0]!r}"
        )
    return schema


def _check_labels(labels: list[str]) -> None:
    if not all(labels):
        raise HintException("schema", "labels: every label needs a name")
    folded = [label.casefold() for label in labels]
    twice = sorted({label for label in labels if folded.count(label.casefold()) > 1})
    if twice:
        raise HintException("schema", f"labels: {', '.join(twice)} given more than once; give each label once")


def _save(
    context: ToolContext, kind: str, name: str, definition: dict, description: str
) -> tuple[InsightDefinition, str]:
    """The newest row of ``name`` if it holds ``definition`` already, else a new version."""
    name = name.strip()
    if not name:
        raise HintException("schema", "name: must not be blank")
    rows = InsightDefinition.objects
    newest = rows.newest(context.tenant_id, kind, name)
    if newest is not None and newest.definition == definition and newest.description == description:
        return newest, "unchanged"
    try:
        with transaction.atomic():
            row = rows.create(
                tenant_id=context.tenant_id,
                kind=kind,
                name=name,
                version=(newest.version + 1) if newest else 1,
                description=description,
                definition=definition,
                created_by=str(context.user_id or ""),
            )
    except IntegrityError:  # another call saved a version of the same name meanwhile
        raise HintException("schema", f"{kind} {name!r} was changed meanwhile; call again") from None
    return row, "saved" if newest is None else f"replaces version {newest.version}"


def _definition(context: ToolContext, kind: str, name: str) -> InsightDefinition:
    """The tenant's newest ``kind`` called ``name``. Raises a fetch Hint with the closest names."""
    row = InsightDefinition.objects.newest(context.tenant_id, kind, name)
    if row is not None:
        return row
    names = InsightDefinition.objects.names(context.tenant_id, kind)
    maker = "create_schema" if kind == InsightKind.SCHEMA else "create_taxonomy"
    raise not_found(f"there is no {kind} called {name!r}", name, names, narrow=f"make it with {maker}")


# --- classify, extract, process -------------------------------------------------------


@uniform_contract(name="classify_document", is_tabular=False)
def classify_document(inputs: dict, context: ToolContext) -> Ok | Err:
    """Label a document from a taxonomy (or a list of labels), with confidences and cited passages."""
    source = _source(inputs, context)
    labels, multi_label, named = _labels(inputs, context)
    try:
        reply = _classify(source, labels, multi_label)
    except CallFailed as failed:
        return failed.charged(context, "classify_document")
    card = insight.classification_card(source, reply.data, named, reply.model)
    return Ok(
        rows=len(card["labels"]),
        data=_classification_text(source, card),
        warnings=_warnings(source, reply),
        effects=Effects(cards=[card], cost=reply.cost),
    )


@uniform_contract(name="extract_document", is_tabular=False)
def extract_document(inputs: dict, context: ToolContext) -> Ok | Err:
    """Extract the fields of a schema from a document, each value with the passages it came from."""
    source = _source(inputs, context)
    schema, description, named = _schema(inputs, context)
    try:
        reply = _extract(source, schema, description)
    except CallFailed as failed:
        return failed.charged(context, "extract_document")
    card = insight.extraction_card(source, reply.data, named, reply.model)
    return Ok(
        rows=1,
        data=_extraction_text(source, card),
        warnings=_warnings(source, reply),
        effects=Effects(cards=[card], cost=reply.cost),
    )


@uniform_contract(name="process_document", is_tabular=False)
def process_document(inputs: dict, context: ToolContext) -> Ok | Err:
    """Classify with a taxonomy, then extract with the schema the chosen label names (or ``schema``)."""
    source = _source(inputs, context)
    labels, multi_label, named = _labels(inputs, context)
    try:
        classified = _classify(source, labels, multi_label)
    except CallFailed as failed:
        return failed.charged(context, "process_document")
    cards = [insight.classification_card(source, classified.data, named, classified.model)]
    text = [_classification_text(source, cards[0])]
    warnings = _warnings(source, classified)
    top = cards[0]["labels"][0]["label"]
    schema_name = inputs.get("schema") or next((e.get("schema") for e in labels if e["label"] == top), None)
    cost = classified.cost
    if schema_name:
        row = _definition(context, InsightKind.SCHEMA, schema_name)
        try:
            extracted = _extract(source, row.definition, row.description)
        except CallFailed as failed:
            return failed.charged(context, "process_document", spent_before=cost)
        cost += extracted.cost
        cards.append(insight.extraction_card(source, extracted.data, _named(row), extracted.model))
        text.append(_extraction_text(source, cards[1]))
    else:
        warnings.append(Warning("incomplete", f"label {top!r} names no schema, so nothing was extracted"))
    return Ok(rows=len(cards), data="\n\n".join(text), warnings=warnings, effects=Effects(cards=cards, cost=cost))


def _source(inputs: dict, context: ToolContext) -> Source:
    """The document the call names (exactly one of document_id, upload, text). Raises HintException."""
    given = [key for key in ("document_id", "upload", "text") if key in inputs]
    if len(given) != 1:
        raise HintException(
            "schema",
            f"give exactly one of document_id, upload or text; got {', '.join(given) or 'none'}",
            [{"label": '{"document_id": 12}', "score": 0.9}, {"label": '{"upload": "invoice.pdf"}', "score": 0.8}],
        )
    if "document_id" in inputs:
        from tools.corpora import resolve_document  # the corpus tools' rule of who may read what

        return insight.document_source(resolve_document(context, inputs["document_id"]))
    item = {key: inputs[key] for key in ("upload", "text", "title") if key in inputs}
    return insight.loaded_source(load_item(item, context))


def _labels(inputs: dict, context: ToolContext) -> tuple[list[dict], bool, dict | None]:
    """The labels to choose from, whether several may apply, and the taxonomy's name and version."""
    if ("taxonomy" in inputs) == ("labels" in inputs):
        raise HintException("schema", "give exactly one of taxonomy (a saved name) or labels (a list)")
    if "labels" in inputs:
        _check_labels(inputs["labels"])
        return [{"label": label} for label in inputs["labels"]], inputs.get("multi_label", False), None
    row = _definition(context, InsightKind.TAXONOMY, inputs["taxonomy"])
    return row.definition["labels"], row.definition["multi_label"], _named(row)


def _schema(inputs: dict, context: ToolContext) -> tuple[dict, str, dict | None]:
    if ("schema" in inputs) == ("json_schema" in inputs):
        raise HintException("schema", "give exactly one of schema (a saved name) or json_schema")
    if "json_schema" in inputs:
        return checked_schema(inputs["json_schema"]), inputs.get("instructions", ""), None
    row = _definition(context, InsightKind.SCHEMA, inputs["schema"])
    return row.definition, row.description, _named(row)


def _named(row: InsightDefinition) -> dict:
    return {"name": row.name, "version": row.version}


def _classify(source: Source, labels: list[dict], multi_label: bool) -> StructuredReply:
    names = [entry["label"] for entry in labels]
    return _ask(
        insight.classification_prompt(source, labels, multi_label),
        insight.classification_schema(names, multi_label, source.labels),
        insight.classification_check,
    )


def _extract(source: Source, schema: dict, description: str) -> StructuredReply:
    return _ask(
        insight.extraction_prompt(source, description),
        insight.extraction_schema(schema, source.labels),
        insight.extraction_check,
    )


def _ask(prompt: str, schema: dict, check: Check) -> StructuredReply:
    """The model's reply. Raises CallFailed with the Err to return and what the attempts cost."""
    try:
        return ask_structured(ROLE, system=SYSTEM, prompt=prompt, schema=schema, check=check)
    except ModelUnavailable as exc:
        raise CallFailed(Err(str(exc), "ModelUnavailable")) from None
    except StructuredReplyError as exc:
        raise CallFailed(Err(str(exc), "ModelReplyInvalid"), exc.cost) from None


def _warnings(source: Source, reply: StructuredReply) -> list[Warning]:
    warnings = []
    if source.left_out:
        read = len(source.passages)
        warnings.append(
            Warning("incomplete", f"only the first {read} of {read + source.left_out} passages were read (size limit)")
        )
    if reply.attempts > 1:
        warnings.append(Warning("data_quality", "the model's first reply did not fit the schema; its repair did"))
    return warnings


def _classification_text(source: Source, card: dict) -> str:
    lines = [f"Classified {_title(source)}:"]
    for entry in card["labels"]:
        cited = ", ".join(quote["id"] for quote in entry["citations"])
        lines.append(f"- {entry['label']} (confidence {entry['confidence']:.2f}) [{cited}]: {entry['reason']}")
    return "\n".join(lines)


def _extraction_text(source: Source, card: dict) -> str:
    lines = [f"Extracted from {_title(source)}:"]
    for field in card["fields"]:
        cited = ", ".join(quote["id"] for quote in field["citations"])
        value = json.dumps(field["value"], ensure_ascii=False)
        lines.append(f"- {field['name']}: {value}" + (f" [{cited}]" if cited else ""))
    return "\n".join(lines)


def _title(source: Source) -> str:
    return f"document {source.document_id} {source.title!r}" if source.document_id else repr(source.title)


_DOCUMENT = {
    "document_id": {
        "type": "integer",
        "minimum": 1,
        "description": "An indexed document (search_documents shows ids).",
    },
    "upload": {"type": "string", "minLength": 1, "description": "A file in the user's uploads, by name."},
    "text": {"type": "string", "minLength": 1, "description": "The document itself, pasted."},
    "title": {"type": "string", "maxLength": 300, "description": "A title for pasted text."},
}
_NAME = {"type": "string", "minLength": 1, "maxLength": 120}
_LABELS = {
    "type": "array",
    "minItems": 2,
    "maxItems": 50,
    "items": {"type": "string", "minLength": 1, "maxLength": 80},
    "description": "Labels to choose from, instead of a saved taxonomy.",
}
_ONE_DOCUMENT = "Give exactly one of document_id, upload or text."

TOOLS = (
    Tool(
        name="create_schema",
        description=(
            "Save a named extraction schema: the fields extract_document and process_document pull out of "
            "a document (e.g. an invoice's number, date, total, supplier). Give simple `fields` or a full "
            "`json_schema`. Saving a changed schema under the same name makes a new version."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": _NAME,
                "description": {"type": "string", "description": "What documents it is for; the model reads it."},
                "fields": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_FIELDS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                            "type": {"type": "string", "enum": list(FIELD_TYPES), "default": "string"},
                            "description": {"type": "string"},
                            "required": {
                                "type": "boolean",
                                "default": False,
                                "description": "Every document has it (otherwise it may be null).",
                            },
                            "enum": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                        },
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
                "json_schema": {"type": "object", "description": "A JSON Schema of type object, instead of fields."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=create_schema,
        category="insight",
        status_message="Saving the schema",
        inline=True,
    ),
    Tool(
        name="create_taxonomy",
        description=(
            "Save a named taxonomy: the labels classify_document and process_document choose from, each "
            "with a description, and optionally the extraction schema process_document uses for "
            "documents given that label. Saving a changed taxonomy under the same name makes a new version."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": _NAME,
                "description": {"type": "string"},
                "labels": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 50,
                    "items": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string", "minLength": 1, "maxLength": 80},
                            "description": {"type": "string", "description": "When the label applies."},
                            "schema": {"type": "string", "description": "A saved schema's name (create_schema)."},
                        },
                        "required": ["label"],
                        "additionalProperties": False,
                    },
                },
                "multi_label": {"type": "boolean", "default": False, "description": "Several labels may apply."},
            },
            "required": ["name", "labels"],
            "additionalProperties": False,
        },
        handler=create_taxonomy,
        category="insight",
        status_message="Saving the taxonomy",
        inline=True,
    ),
    Tool(
        name="classify_document",
        description=(
            "Classify a document (indexed, uploaded or pasted) into a saved taxonomy or a list of labels, "
            "e.g. invoice / contract / complaint. Returns each chosen label with a confidence, a reason and "
            f"the passages that support it. {_ONE_DOCUMENT}"
        ),
        input_schema={
            "type": "object",
            "properties": {
                **_DOCUMENT,
                "taxonomy": {**_NAME, "description": "A saved taxonomy's name (create_taxonomy)."},
                "labels": _LABELS,
                "multi_label": {"type": "boolean", "default": False, "description": "With labels: several may apply."},
            },
            "additionalProperties": False,
        },
        handler=classify_document,
        category="insight",
        status_message="Classifying the document",
        timeout_seconds=300,
    ),
    Tool(
        name="extract_document",
        description=(
            "Extract structured fields from a document (indexed, uploaded or pasted) with a saved schema or "
            "an inline JSON Schema, e.g. an invoice's number, date and total. Every value comes with the "
            f"passages it was read from; missing fields are null. {_ONE_DOCUMENT}"
        ),
        input_schema={
            "type": "object",
            "properties": {
                **_DOCUMENT,
                "schema": {**_NAME, "description": "A saved schema's name (create_schema)."},
                "json_schema": {"type": "object", "description": "A JSON Schema of type object, instead of schema."},
                "instructions": {"type": "string", "description": "With json_schema: what to extract, in words."},
            },
            "additionalProperties": False,
        },
        handler=extract_document,
        category="insight",
        status_message="Extracting from the document",
        timeout_seconds=300,
    ),
    Tool(
        name="process_document",
        description=(
            "Classify a document with a taxonomy, then extract the fields of the schema its label names "
            "(or of `schema`), in one call: e.g. sort incoming mail and read each invoice's total. "
            f"{_ONE_DOCUMENT}"
        ),
        input_schema={
            "type": "object",
            "properties": {
                **_DOCUMENT,
                "taxonomy": {**_NAME, "description": "A saved taxonomy's name (create_taxonomy)."},
                "labels": _LABELS,
                "schema": {**_NAME, "description": "Extract with this saved schema whatever the label."},
            },
            "additionalProperties": False,
        },
        handler=process_document,
        category="insight",
        status_message="Processing the document",
        timeout_seconds=600,
    ),
)

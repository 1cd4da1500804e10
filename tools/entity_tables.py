"""Handlers that move entities to and from tables: ingest_entities and define_entity_projection.

Datasets arrive from the conversation (``context.datasets``, filled from
earlier tools' ``datasets`` side channel) or inline as rows; a pandas
DataFrame and a list of dicts are both accepted, so the coupling to the data
catalog stays one dictionary lookup.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from registry.context import ToolContext
from registry.contract import Effects, HintException, Ok, measure_schema, uniform_contract
from registry.declarations import Tool
from tools.fragments import ENTITY_TYPE, closed_object
from tools.lib import entity_store as store
from tools.lib.entity_store import Provenance
from tools.models import Entity, EntityAlias, EntityProjection, Fact


@uniform_contract(name="ingest_entities", is_tabular=False)
def ingest_entities(inputs: dict, context: ToolContext) -> Ok:
    """One entity per row (by the name column) and one fact per chosen column."""
    rows, origin = _rows(inputs, context)
    name_column = inputs["name_column"]
    columns = list(rows[0].keys()) if rows else []
    if name_column not in columns:
        raise HintException(
            "schema",
            f"name_column {name_column!r} is not a column of {origin}",
            [{"label": c, "score": 0.5} for c in columns],
        )
    attributes = inputs.get("attributes") or [c for c in columns if c != name_column]
    unknown = [a for a in attributes if a not in columns]
    if unknown:
        raise HintException(
            "schema", f"attributes {unknown} are not columns of {origin}", [{"label": c, "score": 0.5} for c in columns]
        )
    created, facts = _ingest(
        context.tenant_id,
        inputs.get("entity_type", "thing"),
        rows,
        name_column,
        attributes,
        Provenance.from_context(context, origin),
    )
    return Ok(
        rows=len(rows),
        data=(
            f"Ingested {len(rows)} row(s) of {origin} as {inputs.get('entity_type', 'thing')} entities: "
            f"{created} new, {len(rows) - created} updated, {facts} fact(s) recorded."
        ),
    )


@uniform_contract(name="define_entity_projection", is_tabular=True)
def define_entity_projection(inputs: dict, context: ToolContext) -> Ok:
    """Save a named table view of one entity type and return it (also as a dataset of that name)."""
    import pandas as pd

    tenant_id = context.tenant_id
    entities = list(Entity.objects.for_tenant(tenant_id).filter(entity_type=inputs["entity_type"]))
    if not entities:
        types = sorted(set(Entity.objects.for_tenant(tenant_id).values_list("entity_type", flat=True)))
        raise HintException(
            "schema", f"no entities of type {inputs['entity_type']!r}", [{"label": t, "score": 0.5} for t in types]
        )
    EntityProjection.objects.update_or_create(
        tenant_id=tenant_id,
        name=inputs["name"],
        defaults={
            "entity_type": inputs["entity_type"],
            "attributes": inputs["attributes"],
            "description": inputs.get("description", ""),
        },
    )
    facts = store.current_facts(entities)
    table = pd.DataFrame(
        [
            {
                "entity": e.name,
                **{a: (facts[e.pk][a].value if a in facts[e.pk] else None) for a in inputs["attributes"]},
            }
            for e in entities
        ],
        columns=["entity", *inputs["attributes"]],
    )
    return Ok(
        rows=len(table), schema=measure_schema(table), data=table, effects=Effects(datasets={inputs["name"]: table})
    )


def _rows(inputs: dict, context: ToolContext) -> tuple[list[dict[str, Any]], str]:
    if "rows" in inputs:
        return inputs["rows"], "the given rows"
    name = inputs.get("dataset")
    available = dict(context.datasets or {})
    if name is None:
        raise HintException(
            "schema",
            "pass `dataset` (a dataset of this conversation) or `rows`",
            [{"label": n, "score": 0.5} for n in available],
        )
    if name not in available:
        raise HintException(
            "schema", f"dataset {name!r} is not in this conversation", [{"label": n, "score": 0.5} for n in available]
        )
    data = available[name]
    if hasattr(data, "to_dict"):
        data = data.to_dict(orient="records")
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise HintException("schema", f"dataset {name!r} is not a table of rows")
    return data, f"dataset {name!r}"


@transaction.atomic
def _ingest(
    tenant_id: str, entity_type: str, rows: list[dict], name_column: str, attributes: list[str], provenance: Provenance
) -> tuple[int, int]:
    """Upsert entities by name (one query to find, one bulk insert) and append their facts."""
    names = {store.alias_key(str(r[name_column])): str(r[name_column]).strip() for r in rows if r.get(name_column)}
    existing = {
        a.key: a.entity
        for a in EntityAlias.objects.for_tenant(tenant_id)
        .filter(key__in=list(names), entity__entity_type=entity_type)
        .select_related("entity")
    }
    new = [Entity(tenant_id=tenant_id, entity_type=entity_type, name=names[k]) for k in names if k not in existing]
    Entity.objects.bulk_create(new)
    for entity in new:
        existing[store.alias_key(entity.name)] = entity
    EntityAlias.objects.bulk_create(
        [EntityAlias(tenant_id=tenant_id, entity=e, alias=e.name, key=store.alias_key(e.name)) for e in new],
        ignore_conflicts=True,
    )
    facts = [
        Fact(
            tenant_id=tenant_id,
            entity=existing[store.alias_key(str(row[name_column]))],
            attribute=attribute,
            value=value,
            **provenance.fields(),
        )
        for row in rows
        if row.get(name_column)
        for attribute in attributes
        if (value := store.json_value(row.get(attribute))) is not None
    ]
    Fact.objects.bulk_create(facts)
    touched = {e.pk for e in existing.values()}
    Entity.objects.filter(pk__in=touched).update(updated_at=timezone.now())
    return len(new), len(facts)


TOOLS = (
    Tool(
        name="ingest_entities",
        description=(
            "Turn the rows of a table into entities and facts: one entity per row, named by name_column, "
            "and one fact per other column (or the listed attributes). Pass the name of a dataset of this "
            "conversation, or the rows themselves."
        ),
        input_schema=closed_object(
            {
                "dataset": {"type": "string", "minLength": 1},
                "rows": {"type": "array", "minItems": 1, "items": {"type": "object"}},
                "name_column": {"type": "string", "minLength": 1},
                "entity_type": ENTITY_TYPE,
                "attributes": {"type": "array", "items": {"type": "string"}},
            },
            ["name_column"],
        ),
        handler=ingest_entities,
        category="entity",
        status_message="Ingesting entities",
        sequential=True,
    ),
    Tool(
        name="define_entity_projection",
        description=(
            "Save a named table view of one entity type with the chosen attributes as columns, and get "
            "that table now (it becomes a dataset of the conversation under the same name)."
        ),
        input_schema=closed_object(
            {
                "name": {"type": "string", "minLength": 1, "maxLength": 120},
                "entity_type": ENTITY_TYPE,
                "attributes": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                "description": {"type": "string"},
            },
            ["name", "entity_type", "attributes"],
        ),
        handler=define_entity_projection,
        category="entity",
        status_message="Building the entity table",
    ),
)

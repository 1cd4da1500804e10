"""The entity substrate's queries and writes: names and aliases, facts with provenance, recall."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Max

from registry.context import ToolContext
from tools.lib.hybrid import MIN_SIMILARITY, IndexCache, as_document, build_index, embed_missing
from tools.models import Entity, EntityAlias, Fact

_INDEXES = IndexCache()


def alias_key(name: str) -> str:
    """How names are compared: case-folded, inner whitespace collapsed."""
    return " ".join(name.casefold().split())


@dataclass(frozen=True)
class Provenance:
    conversation_id: str = ""
    tool_call_id: str = ""
    recorded_by: str = ""
    source: str = ""

    @classmethod
    def from_context(cls, context: ToolContext, source: str = "") -> Provenance:
        return cls(
            conversation_id=str(context.conversation_id or ""),
            tool_call_id=str(context.tool_use_id or ""),
            recorded_by=str(context.user_id or ""),
            source=source,
        )

    def fields(self) -> dict:
        return {
            "conversation_id": self.conversation_id,
            "tool_call_id": self.tool_call_id,
            "recorded_by": self.recorded_by,
            "source": self.source,
        }


def find_by_name(tenant_id: str, name: str, entity_type: str | None = None) -> list[Entity]:
    """The tenant's entities answering to ``name`` (name or alias), optionally of one type."""
    rows = Entity.objects.for_tenant(tenant_id).filter(aliases__key=alias_key(name))
    if entity_type:
        rows = rows.filter(entity_type=entity_type)
    return list(rows.distinct())


def add_aliases(entity: Entity, names: Iterable[str]) -> None:
    EntityAlias.objects.bulk_create(
        [
            EntityAlias(tenant_id=entity.tenant_id, entity=entity, alias=n.strip(), key=alias_key(n))
            for n in names
            if n and n.strip()
        ],
        ignore_conflicts=True,
    )


def create_entity(tenant_id: str, name: str, entity_type: str, aliases: Iterable[str] = ()) -> Entity:
    entity = Entity.objects.create(tenant_id=tenant_id, name=name.strip(), entity_type=entity_type)
    add_aliases(entity, [name, *aliases])
    return entity


def json_value(value):
    """A JSON-safe fact value (numpy scalars unwrapped); None for a missing value (NaN, NaT)."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, (str, int, float, bool, list, dict)):
        return str(value)
    return value


@transaction.atomic
def record_facts(entity: Entity, facts: dict, provenance: Provenance) -> list[Fact]:
    """Append facts (attribute -> value) to ``entity`` and mark it changed; earlier facts stay as history."""
    rows = Fact.objects.bulk_create(
        [
            Fact(tenant_id=entity.tenant_id, entity=entity, attribute=attribute, value=value, **provenance.fields())
            for attribute, value in facts.items()
        ]
    )
    entity.save(update_fields=["updated_at"])
    return rows


def current_facts(entities: list[Entity]) -> dict[int, dict[str, Fact]]:
    """The latest fact per attribute for each entity, in one query."""
    latest: dict[int, dict[str, Fact]] = {e.pk: {} for e in entities}
    for fact in Fact.objects.filter(entity__in=entities).order_by("recorded_at", "id"):
        latest[fact.entity_id][fact.attribute] = fact
    return latest


def describe(entity: Entity, facts: dict[str, Fact], aliases: list[str]) -> str:
    """The text an entity is embedded and matched by: name, type, aliases, current facts."""
    others = [a for a in aliases if alias_key(a) != alias_key(entity.name)]
    parts = [f"{entity.name} ({entity.entity_type})."]
    if others:
        parts.append("Also known as " + ", ".join(others) + ".")
    parts.extend(f"{attribute}: {fact.value}." for attribute, fact in sorted(facts.items()))
    return " ".join(parts)


def recall(tenant_id: str, query: str, limit: int, entity_type: str | None) -> list[tuple[Entity, float, str]]:
    """Entities for ``query``: exact name/alias matches first, then by meaning. ``(entity, score, how)``."""
    exact = find_by_name(tenant_id, query, entity_type)
    found = [(e, 1.0, "name" if alias_key(e.name) == alias_key(query) else "alias") for e in exact]
    index = _tenant_index(tenant_id)
    if len(index) and len(found) < limit:
        allowed = None
        if entity_type:
            allowed = {
                str(pk)
                for pk in Entity.objects.for_tenant(tenant_id)
                .filter(entity_type=entity_type)
                .values_list("id", flat=True)
            }
        hits = (
            index.search(query, limit + len(found), allowed, min_similarity=MIN_SIMILARITY, scope=tenant_id)
            if allowed != set()
            else []
        )
        seen = {e.pk for e, _, _ in found}
        by_pk = Entity.objects.for_tenant(tenant_id).in_bulk([int(h.key) for h in hits if int(h.key) not in seen])
        found.extend((by_pk[int(h.key)], h.score, "meaning") for h in hits if int(h.key) in by_pk)
    return found[:limit]


def _tenant_index(tenant_id: str):
    rows = Entity.objects.for_tenant(tenant_id)
    fingerprint = tuple(rows.aggregate(n=Count("id"), changed=Max("updated_at"), last=Max("id")).values())
    return _INDEXES.get(tenant_id, fingerprint, lambda: _build(tenant_id))


def _build(tenant_id: str):
    entities = list(Entity.objects.for_tenant(tenant_id).prefetch_related("aliases"))
    facts = current_facts(entities)
    documents = [
        as_document(e.pk, e.name, describe(e, facts[e.pk], [a.alias for a in e.aliases.all()])) for e in entities
    ]
    vectors, fresh = embed_missing(documents, {str(e.pk): (e.embedding, e.embedding_model) for e in entities})
    for key, (blob, tag) in fresh.items():  # update(), not save(): a stored vector is not a change of the entity
        Entity.objects.filter(pk=int(key)).update(embedding=blob, embedding_model=tag)
    return build_index(documents, vectors)


def clear_cache() -> None:
    _INDEXES.clear()

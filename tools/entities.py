"""Handlers of the entity tools: facts about named things, with provenance, per tenant.

An entity is a named thing of a type (a customer, a site, a person); a fact
is one attribute's value as recorded at a time, by a tool call of a
conversation. Facts are appended, never overwritten: the latest fact per
attribute is the current value, the rest is history.
"""

from __future__ import annotations

import difflib

from django.db.models import Count

from registry.context import ToolContext
from registry.contract import HintException, Ok, uniform_contract
from registry.declarations import Tool
from tools.fragments import ENTITY_NAME, ENTITY_TYPE, closed_object
from tools.lib import entity_store as store
from tools.lib.entity_store import Provenance
from tools.models import Entity, EntityAlias, EntityLink, Fact


@uniform_contract(name="record_fact", is_tabular=False)
def record_fact(inputs: dict, context: ToolContext) -> Ok:
    """Record one attribute value of an entity, creating the entity if it is new."""
    tenant_id = context.tenant_id
    entity_type = inputs.get("entity_type")
    matches = store.find_by_name(tenant_id, inputs["entity"], entity_type)
    if len(matches) > 1:
        raise HintException(
            "ambiguous",
            f"{inputs['entity']!r} names {len(matches)} entities; pass entity_type",
            [{"label": f"entity_type: {e.entity_type} ({e.name})", "score": 0.5} for e in matches],
        )
    entity = matches[0] if matches else store.create_entity(tenant_id, inputs["entity"], entity_type or "thing")
    store.add_aliases(entity, inputs.get("aliases", []))
    previous = store.current_facts([entity])[entity.pk].get(inputs["attribute"])
    store.record_facts(
        entity, {inputs["attribute"]: inputs["value"]}, Provenance.from_context(context, inputs.get("source", ""))
    )
    line = f"Recorded {entity.name} ({entity.entity_type}, id {entity.pk}): {inputs['attribute']} = {inputs['value']!r}"
    if previous is not None and previous.value != inputs["value"]:
        line += f" (was {previous.value!r}, recorded {previous.recorded_at:%Y-%m-%d %H:%M} UTC)"
    return Ok(rows=1, data=line + ("." if matches else ". New entity."))


@uniform_contract(name="get_entity", is_tabular=False)
def get_entity(inputs: dict, context: ToolContext) -> Ok:
    """One entity with its aliases, current facts (with provenance), fact history size and links."""
    entity = resolve_entity(context.tenant_id, inputs["entity"], inputs.get("entity_type"))
    facts = store.current_facts([entity])[entity.pk]
    aliases = [a.alias for a in entity.aliases.all() if store.alias_key(a.alias) != store.alias_key(entity.name)]
    lines = [f"{entity.name} ({entity.entity_type}, id {entity.pk})"]
    if aliases:
        lines.append("Aliases: " + ", ".join(aliases))
    lines.append(f"Facts ({len(facts)} current, {entity.facts.count()} recorded):")
    for attribute, fact in sorted(facts.items()):
        lines.append(f"- {attribute}: {fact.value!r} — {_provenance(fact)}")
    links = EntityLink.objects.filter(source_entity=entity).select_related("target_entity")
    back = EntityLink.objects.filter(target_entity=entity).select_related("source_entity")
    for link in links:
        lines.append(f"→ {link.relation} {link.target_entity.name} ({link.target_entity.entity_type})")
    for link in back:
        lines.append(f"← {link.source_entity.name} ({link.source_entity.entity_type}) {link.relation} this")
    return Ok(rows=1, data="\n".join(lines))


@uniform_contract(name="list_entities", is_tabular=False)
def list_entities(inputs: dict, context: ToolContext) -> Ok:
    """The tenant's entities, optionally of one type, a page at a time."""
    rows = Entity.objects.for_tenant(context.tenant_id)
    if inputs.get("entity_type"):
        rows = rows.filter(entity_type=inputs["entity_type"])
    total = rows.count()
    offset, limit = inputs.get("offset", 0), inputs.get("limit", 50)
    page = list(rows[offset : offset + limit])
    if total == 0 and inputs.get("entity_type"):
        types = list(Entity.objects.for_tenant(context.tenant_id).values_list("entity_type", flat=True).distinct())
        raise HintException(
            "schema", f"no entities of type {inputs['entity_type']!r}", [{"label": t, "score": 0.5} for t in types]
        )
    counts = dict(
        Fact.objects.filter(entity__in=page).values_list("entity").annotate(n=Count("id")).values_list("entity", "n")
    )
    lines = [f"{total} entit{'y' if total == 1 else 'ies'}; showing {offset + 1 if page else 0}–{offset + len(page)}:"]
    lines.extend(f"- {e.name} ({e.entity_type}, id {e.pk}): {counts.get(e.pk, 0)} fact(s)" for e in page)
    if offset + len(page) < total:
        lines.append(f"More: call again with offset {offset + len(page)}.")
    return Ok(rows=total, data="\n".join(lines))


@uniform_contract(name="link_entities", is_tabular=False)
def link_entities(inputs: dict, context: ToolContext) -> Ok:
    """Record a named relation from one entity to another (both must exist)."""
    tenant_id = context.tenant_id
    source = resolve_entity(tenant_id, inputs["source"], inputs.get("source_type"))
    target = resolve_entity(tenant_id, inputs["target"], inputs.get("target_type"))
    link, created = EntityLink.objects.get_or_create(
        tenant_id=tenant_id,
        source_entity=source,
        target_entity=target,
        relation=inputs["relation"],
        defaults=Provenance.from_context(context).fields(),
    )
    verb = "Linked" if created else "Already linked:"
    return Ok(rows=1, data=f"{verb} {source.name} —{link.relation}→ {target.name}.")


@uniform_contract(name="recall_entities", is_tabular=False)
def recall_entities(inputs: dict, context: ToolContext) -> Ok:
    """Entities by name, alias or meaning, with their current facts."""
    tenant_id = context.tenant_id
    found = store.recall(tenant_id, inputs["query"], inputs.get("limit", 5), inputs.get("entity_type"))
    if not found:
        raise HintException(
            "fetch",
            f"no entity matches {inputs['query']!r}",
            narrow="use a name, an alias or a few words about the entity; list_entities shows them all",
        )
    facts = store.current_facts([e for e, _, _ in found])
    lines = [f"{len(found)} entit{'y' if len(found) == 1 else 'ies'} for {inputs['query']!r}:"]
    for entity, score, how in found:
        current = "; ".join(f"{a}={f.value!r}" for a, f in sorted(facts[entity.pk].items()))
        lines.append(
            f"- {entity.name} ({entity.entity_type}, id {entity.pk}) [by {how}, {score:.2f}]: {current or 'no facts'}"
        )
    return Ok(rows=len(found), data="\n".join(lines))


def resolve_entity(tenant_id: str, name: str, entity_type: str | None = None) -> Entity:
    """The one entity of the tenant called ``name``. Raises HintException (ambiguous or did-you-mean)."""
    matches = store.find_by_name(tenant_id, name, entity_type)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise HintException(
            "ambiguous",
            f"{name!r} names {len(matches)} entities; pass the type",
            [{"label": f"{e.name} ({e.entity_type})", "score": 0.5} for e in matches],
        )
    keys = dict(EntityAlias.objects.for_tenant(tenant_id).values_list("key", "alias")[:5000])
    close = difflib.get_close_matches(store.alias_key(name), list(keys), n=5, cutoff=0.5)
    alternatives = [
        {"label": keys[k], "score": round(difflib.SequenceMatcher(None, store.alias_key(name), k).ratio(), 3)}
        for k in close
    ]
    raise HintException(
        "schema",
        f"no entity called {name!r}" + ("" if close else "; recall_entities searches by meaning"),
        alternatives,
    )


def _provenance(fact: Fact) -> str:
    where = f"conversation {fact.conversation_id}" if fact.conversation_id else "outside a conversation"
    call = f", call {fact.tool_call_id}" if fact.tool_call_id else ""
    source = f", source {fact.source}" if fact.source else ""
    return f"{fact.recorded_at:%Y-%m-%d %H:%M} UTC, {where}{call}{source}"


TOOLS = (
    Tool(
        name="record_fact",
        description=(
            "Remember one fact about a named thing (a customer, site, person, product…) for later "
            "conversations: its attribute and value. Creates the entity if it is new; a newer value of the "
            "same attribute supersedes the old one, which stays in the history with where it came from."
        ),
        input_schema=closed_object(
            {
                "entity": ENTITY_NAME,
                "entity_type": ENTITY_TYPE,
                "attribute": {"type": "string", "minLength": 1, "maxLength": 120},
                "value": {"description": "Any JSON value: text, number, list or object."},
                "aliases": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "description": "Other names.",
                },
                "source": {"type": "string", "description": "Where the fact comes from (a document, a URL)."},
            },
            ["entity", "attribute", "value"],
        ),
        handler=record_fact,
        category="entity",
        status_message="Recording a fact",
        inline=True,
    ),
    Tool(
        name="get_entity",
        description=(
            "Show everything known about one named thing: aliases, current facts with when and where each "
            "was recorded, and its links to other entities."
        ),
        input_schema=closed_object(
            {"entity": ENTITY_NAME, "entity_type": ENTITY_TYPE},
            ["entity"],
        ),
        handler=get_entity,
        category="entity",
        status_message="Looking up the entity",
        inline=True,
    ),
    Tool(
        name="list_entities",
        description="List the remembered entities, optionally of one type, a page at a time.",
        input_schema=closed_object(
            {
                "entity_type": ENTITY_TYPE,
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                "offset": {"type": "integer", "minimum": 0, "default": 0},
            },
            [],
        ),
        handler=list_entities,
        category="entity",
        status_message="Listing entities",
        inline=True,
    ),
    Tool(
        name="link_entities",
        description="Record a relation between two remembered entities, e.g. 'Acme' owns 'Plant 7'.",
        input_schema=closed_object(
            {
                "source": ENTITY_NAME,
                "target": ENTITY_NAME,
                "relation": {"type": "string", "minLength": 1, "maxLength": 120},
                "source_type": ENTITY_TYPE,
                "target_type": ENTITY_TYPE,
            },
            ["source", "target", "relation"],
        ),
        handler=link_entities,
        category="entity",
        status_message="Linking entities",
        inline=True,
    ),
    Tool(
        name="recall_entities",
        description=(
            "Find remembered entities by name, alias or meaning ('the supplier in Lyon') and show their "
            "current facts. Use it before answering about people, customers or places mentioned earlier."
        ),
        input_schema=closed_object(
            {
                "query": {"type": "string", "minLength": 1},
                "entity_type": ENTITY_TYPE,
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5},
            },
            ["query"],
        ),
        handler=recall_entities,
        category="entity",
        status_message="Recalling entities",
    ),
)

"""The entity substrate: facts about named things, with provenance."""

_NAME = {"type": "string", "minLength": 1, "maxLength": 300, "description": "The entity's name or one of its aliases."}
_TYPE = {"type": "string", "minLength": 1, "maxLength": 64, "description": "Kind of thing, e.g. customer, site, person."}


def _entry(name: str, description: str, properties: dict, required: list[str], status: str, **extra) -> dict:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        "category": "entity",
        "handler_path": f"tools.{extra.pop('module', 'entities')}.{name}",
        "status_message": status,
        **extra,
    }


TOOLS = [
    _entry(
        "record_fact",
        "Remember one fact about a named thing (a customer, site, person, product…) for later "
        "conversations: its attribute and value. Creates the entity if it is new; a newer value of the "
        "same attribute supersedes the old one, which stays in the history with where it came from.",
        {"entity": _NAME, "entity_type": _TYPE, "attribute": {"type": "string", "minLength": 1, "maxLength": 120},
         "value": {"description": "Any JSON value: text, number, list or object."},
         "aliases": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Other names."},
         "source": {"type": "string", "description": "Where the fact comes from (a document, a URL)."}},
        ["entity", "attribute", "value"], "Recording a fact", inline=True,
    ),
    _entry(
        "get_entity",
        "Show everything known about one named thing: aliases, current facts with when and where each "
        "was recorded, and its links to other entities.",
        {"entity": _NAME, "entity_type": _TYPE}, ["entity"], "Looking up the entity", inline=True,
    ),
    _entry(
        "list_entities",
        "List the remembered entities, optionally of one type, a page at a time.",
        {"entity_type": _TYPE, "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
         "offset": {"type": "integer", "minimum": 0, "default": 0}},
        [], "Listing entities", inline=True,
    ),
    _entry(
        "link_entities",
        "Record a relation between two remembered entities, e.g. 'Acme' owns 'Plant 7'.",
        {"source": _NAME, "target": _NAME, "relation": {"type": "string", "minLength": 1, "maxLength": 120},
         "source_type": _TYPE, "target_type": _TYPE},
        ["source", "target", "relation"], "Linking entities", inline=True,
    ),
    _entry(
        "recall_entities",
        "Find remembered entities by name, alias or meaning ('the supplier in Lyon') and show their "
        "current facts. Use it before answering about people, customers or places mentioned earlier.",
        {"query": {"type": "string", "minLength": 1}, "entity_type": _TYPE,
         "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5}},
        ["query"], "Recalling entities",
    ),
    _entry(
        "ingest_entities",
        "Turn the rows of a table into entities and facts: one entity per row, named by name_column, "
        "and one fact per other column (or the listed attributes). Pass the name of a dataset of this "
        "conversation, or the rows themselves.",
        {"dataset": {"type": "string", "minLength": 1}, "rows": {"type": "array", "minItems": 1, "items": {"type": "object"}},
         "name_column": {"type": "string", "minLength": 1}, "entity_type": _TYPE,
         "attributes": {"type": "array", "items": {"type": "string"}}},
        ["name_column"], "Ingesting entities", module="entity_tables", sequential=True,
    ),
    _entry(
        "define_entity_projection",
        "Save a named table view of one entity type with the chosen attributes as columns, and get "
        "that table now (it becomes a dataset of the conversation under the same name).",
        {"name": {"type": "string", "minLength": 1, "maxLength": 120}, "entity_type": _TYPE,
         "attributes": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
         "description": {"type": "string"}},
        ["name", "entity_type", "attributes"], "Building the entity table", module="entity_tables",
    ),
]

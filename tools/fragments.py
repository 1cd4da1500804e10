"""JSON Schema fragments that the tool declarations of more than one module share."""

from __future__ import annotations

from typing import Any

DATASET = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "Dataset name in this conversation; omit for the most recent one.",
}

ENTITY_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 300,
    "description": "The entity's name or one of its aliases.",
}
ENTITY_TYPE = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": "Kind of thing, e.g. customer, site, person.",
}


def closed_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object schema with exactly these properties, of which ``required`` must be given."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}

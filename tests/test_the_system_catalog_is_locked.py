"""What the system catalog gives the model, the database and the dispatcher, locked.

The composed declarations (names, descriptions, schemas with their key order,
order, flags), the rows seeding writes, the tool array the model is offered,
the handlers' run flags and the contract specs must equal golden/system_catalog.json,
which was written from the catalog before tools were declared next to their
handlers. After a deliberate change to a tool, rewrite it with ``UPDATE_GOLDEN=1``
and review the diff like any other change: it is what the model reads.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from registry.contract import spec_for
from registry.declarations import OPTIONAL_KEYS, REQUIRED_KEYS
from registry.models import ToolDefinition, ToolType
from tools.catalog import TOOL_ORDER, all_system_tools

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden" / "system_catalog.json"
ENTRY_DEFAULTS = {
    "status_message": None,
    "large_output": False,
    "inline": False,
    "timeout_seconds": None,
    "replaced_by_model_capability": None,
    "sequential": False,
    "killable": False,
}
ROW_FIELDS = (
    "category",
    "handler_path",
    "status_message",
    "large_output",
    "implementation",
    "replaced_by_model_capability",
    "definition_hash",
    "version",
    "status",
    "tool_type",
)


def snapshot(registry) -> dict:
    """Everything the catalog decides, as JSON-able values (schemas keep their key order)."""
    keys = (*REQUIRED_KEYS, *OPTIONAL_KEYS)
    entries = [{key: entry.get(key, ENTRY_DEFAULTS.get(key)) for key in keys} for entry in all_system_tools()]
    rows = ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM).order_by("id")
    offered = registry.get_tools_for_llm("acme")
    return {
        "order": list(TOOL_ORDER),
        "entries": entries,
        "rows": {row.name: {field: getattr(row, field) for field in ROW_FIELDS} for row in rows},
        "offered": [tool["name"] for tool in offered],
        "offered_sha256": hashlib.sha256(json.dumps(offered, ensure_ascii=False).encode()).hexdigest(),
        "handlers": {
            name: {
                "inline": h.inline,
                "timeout": h.timeout,
                "sequential": h.sequential,
                "is_async": h.is_async,
                "killable": h.killable,
            }
            for name, h in sorted(registry._handlers.items())
        },
        "specs": {entry["name"]: _spec(entry["name"]) for entry in entries},
    }


def _spec(name: str) -> dict:
    spec = spec_for(name)
    return {
        "is_tabular": spec.is_tabular,
        "is_cost_rollup": spec.is_cost_rollup,
        "expected_envelopes": sorted(spec.expected_envelopes),
        "handler": f"{spec.handler.__module__}.{spec.handler.__qualname__}",
    }


def render(value: dict) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def test_the_composed_catalog_is_byte_for_byte_the_golden_one(registry):
    actual = render(snapshot(registry))
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(actual, encoding="utf-8")
    assert actual == GOLDEN.read_text(encoding="utf-8")


def test_seeded_rows_carry_what_the_declarations_say():
    rows = {row.name: row for row in ToolDefinition.objects.filter(tool_type=ToolType.SYSTEM)}
    for entry in all_system_tools():
        row = rows[entry["name"]]
        assert (row.description, row.input_schema) == (entry["description"], entry["input_schema"]), entry["name"]
        assert json.dumps(row.input_schema) == json.dumps(entry["input_schema"]), entry["name"]

"""An in-memory copy of the live tool definitions, so dispatch needs no query.

The copy is rebuilt when a definition changes in this process (signals) or in
another one (the process bus pushes it: registry/signals.py, eunice/bus.py) and,
should a push be missed, when a cheap fingerprint query (row count and newest
``updated_at``) differs; that query runs at most once every
``EUNICE_REGISTRY_POLL_SECONDS`` (2 s by default).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from eunice.jsonlimits import loads_bounded
from llm.offline import slash_command
from registry.hot_settings import hot
from registry.models import (
    ALL_TENANTS,
    HASHED_FIELDS,
    INTERNAL_CATEGORY,
    ToolDefinition,
    ToolStatus,
    ToolType,
    definition_hash,
)


def _poll_seconds() -> float:
    return hot.registry_poll_seconds  # read on each look: a test may change it


REASONING_FIELD = {
    "type": "string",
    "description": (
        "Why you chose this tool and approach, in a sentence. Recorded for audit; the tool itself never reads it."
    ),
}
NO_REASONING = frozenset({"plan"})


@dataclass(frozen=True, slots=True)
class Definition:
    id: int
    name: str
    description: str
    input_schema: dict
    tool_type: str
    status: str
    enabled: bool
    category: str
    tenant_id: str
    handler_path: str
    implementation: str
    status_message: str
    schema_key: str
    approved_hash: str
    current_hash: str  # of exactly what this snapshot holds; custom tools only
    llm_schema: dict = field(compare=False)
    # Inputs never to be stored or shown as given (``"writeOnly": true`` in the schema).
    secret_inputs: frozenset[str] = field(default=frozenset(), compare=False)
    # Custom tools: the tools its code may call through call_tool (part of the approved hash).
    dependencies: tuple[str, ...] = ()
    # The tool as a request's tools array offers it, and the length of its JSON there:
    # made once per snapshot, not on every model call of every turn.
    llm_tool: dict = field(default_factory=dict, compare=False)
    llm_chars: int = field(default=0, compare=False)

    def callable_by(self, tenant_id: str) -> bool:
        return self.status == _APPROVED and self.enabled and self.tenant_id in (tenant_id, ALL_TENANTS)

    def visible_to(self, tenant_id: str) -> bool:
        return self.category != INTERNAL_CATEGORY and self.callable_by(tenant_id)


# Read once: a member read through its Enum class (``ToolStatus.APPROVED``) costs a
# lookup in the class's members on every call, and ``callable_by`` is on every call's path.
# Its plain text: the interpreter compares two ``str`` faster than a ``str`` and a StrEnum.
_APPROVED = ToolStatus.APPROVED.value


def llm_schema(name: str, schema: dict) -> dict:
    """The schema offered to the model: the tool's own plus a required ``reasoning``; its
    ``examples`` only where they pay for their tokens (``shows_examples``)."""
    if "examples" in schema and not shows_examples(schema):
        schema = {key: value for key, value in schema.items() if key != "examples"}
    if name in NO_REASONING:
        return schema
    properties = {**(schema.get("properties") or {}), "reasoning": REASONING_FIELD}
    required = [*(schema.get("required") or []), "reasoning"]
    return {**schema, "properties": properties, "required": required}


# A tool with this many parameters or more is shown its input examples, whatever their types.
EXAMPLES_FROM_PARAMETERS = 5


def shows_examples(schema: dict) -> bool:
    """Whether the model is shown a tool's input examples: when a parameter is a nested
    object or an array, or the tool has ``EXAMPLES_FROM_PARAMETERS`` parameters or more.
    For a few flat parameters the schema says enough; examples would only cost tokens."""
    properties = schema.get("properties") or {}
    if len(properties) >= EXAMPLES_FROM_PARAMETERS:
        return True
    return any(_is_nested(spec) for spec in properties.values())


def _is_nested(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    kinds = spec.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    return bool(kinds & {"object", "array"}) or "properties" in spec or "items" in spec


def _definition(row: dict) -> Definition:
    from registry.validation import schema_key

    schema = row["input_schema"] or {"type": "object"}
    offered = llm_schema(row["name"], schema)
    tool = {"name": row["name"], "description": row["description"], "input_schema": offered}
    return Definition(
        id=row["id"],
        name=row["name"],
        description=row["description"],
        input_schema=schema,
        tool_type=row["tool_type"],
        status=row["status"],
        enabled=row["enabled"],
        category=row["category"],
        tenant_id=row["tenant_id"],
        handler_path=row["handler_path"],
        implementation=row["implementation"],
        status_message=row["status_message"],
        schema_key=schema_key(schema),
        approved_hash=row["approved_hash"],
        current_hash=_current_hash(row) if row["tool_type"] == ToolType.CUSTOM else "",
        dependencies=tuple(row["dependencies"] or ()),
        llm_schema=offered,
        secret_inputs=secret_inputs(schema),
        llm_tool=tool,
        llm_chars=len(json.dumps(tool, ensure_ascii=False, default=str)),
    )


REDACTED = "[redacted]"


def secret_inputs(schema: dict) -> frozenset[str]:
    """The top-level inputs the schema marks ``"writeOnly": true`` (passwords, keys):
    a tool reads them, the execution log and the conversation's events never keep them."""
    properties = schema.get("properties") or {}
    return frozenset(
        name for name, spec in properties.items() if isinstance(spec, dict) and spec.get("writeOnly") is True
    )


def redacted(inputs: dict, definition: Definition | None) -> dict:
    """``inputs`` as they may be kept: each of the definition's secret inputs replaced
    (the same dict when there is none, or no definition)."""
    secret = definition.secret_inputs if definition is not None else frozenset()
    if not secret or secret.isdisjoint(inputs):
        return inputs
    return {name: REDACTED if name in secret else value for name, value in inputs.items()}


def redact_command(text: str, definitions: Callable[[], Mapping[str, Definition]]) -> str:
    """``text`` as it may be stored: a slash command (``llm.offline.slash_command``) for
    a tool whose schema marks inputs ``writeOnly`` keeps ``"[redacted]"`` in their place
    (the message row, the ``user_message`` event and the turn record never hold what was
    typed); any other text is returned unchanged. A command to such a tool whose
    arguments do not parse as an object keeps only the tool's name: whatever it held may
    be the secret. ``definitions`` (the registry's) is called only for a slash command,
    so a plain message never loads the registry."""
    command = slash_command(text)
    definition = definitions().get(command[0]) if command else None
    if command is None or definition is None or not definition.secret_inputs:
        return text
    name, raw = command
    try:
        inputs = loads_bounded(raw or "{}", what="the arguments")
    except ValueError:  # not JSON, or nested past the limit (JSONTooDeep)
        inputs = None
    if not isinstance(inputs, dict):
        return f"/{name} {REDACTED}"
    kept = redacted(inputs, definition)
    return text if kept is inputs else f"/{name} {json.dumps(kept, ensure_ascii=False)}"


def _current_hash(row: dict) -> str:
    return definition_hash(**{field: row[field] for field in HASHED_FIELDS})


_FIELDS = (
    "id",
    "name",
    "description",
    "input_schema",
    "tool_type",
    "status",
    "enabled",
    "category",
    "tenant_id",
    "handler_path",
    "implementation",
    "status_message",
    "approved_hash",
    "dependencies",
)


class Snapshot:
    """The live definitions by name (``current``), read again when they may be stale.

    One thread reads at a time. Another that finds them stale meanwhile waits for that
    read rather than answer from the definitions being replaced: before the first read
    those are none at all, and a call made then (a server's first requests, while its
    preload reads the catalog) was told its tool does not exist. A read that fails
    leaves them due another read.
    """

    def __init__(self) -> None:
        self.by_name: dict[str, Definition] = {}
        self.generation = 0
        self._fingerprint: tuple | None = None
        self._checked_at = float("-inf")
        self._dirty = True
        self._reading = threading.Lock()

    def invalidate(self) -> None:
        self._dirty = True

    def fresh(self) -> bool:
        """Whether ``current`` would answer now without a query."""
        return not self._dirty and time.monotonic() - self._checked_at <= _poll_seconds()

    def recheck(self) -> bool:
        """Whether the definitions changed, asked of the database now whatever the poll
        interval (the fingerprint query; a full read only when it differs). For a call
        about to be refused for a tool this copy does not have, or not for its caller:
        the tool may have been added or approved in another process since the last look."""
        generation = self.generation
        self._checked_at = float("-inf")
        self.current()
        return self.generation != generation

    def current(self) -> dict[str, Definition]:
        """The definitions, reloaded first if they may be stale."""
        now = time.monotonic()
        if self._dirty or now - self._checked_at > hot.registry_poll_seconds:  # (_poll_seconds, inlined)
            self._refresh()
        return self.by_name

    def _refresh(self) -> None:
        from django.db.models import Count, Max

        with self._reading:
            started = time.monotonic()
            if self.fresh():
                return  # read by another thread while this one waited
            dirty, self._dirty = self._dirty, False  # an invalidate() from now on asks for another read
            try:
                stats = ToolDefinition.objects.aggregate(n=Count("id"), latest=Max("updated_at"))
                fingerprint = (stats["n"], stats["latest"])
                if not dirty and fingerprint == self._fingerprint:
                    self._checked_at = started
                    return
                by_name = {row["name"]: _definition(row) for row in ToolDefinition.objects.live().values(*_FIELDS)}
            except BaseException:
                self._dirty = self._dirty or dirty
                raise
            self.by_name, self._fingerprint = by_name, fingerprint
            self.generation += 1
            self._checked_at = started

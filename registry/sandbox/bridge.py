"""``call_tool`` and ``call`` from sandboxed code: which tools a run may reach, as whom,
on what budget, and what comes back (``call_tool``: the tool's text; ``call``: its data,
``as_data``, with the cards, files and datasets it made collected in ``InnerEffects``).

Every nested call re-enters the registry with the caller's identity (tenant, user,
conversation) and the run's ``Scope``: its nesting depth, the tools it may call and
the ``Allowance`` that the whole tree of nested runs shares (wall-clock deadline,
CPU seconds, call_tool calls). Whatever tool is called in between, a system tool
that runs code (analyze_data) or another custom tool, the next run starts from the
scope it finds in its context, so depth and budget never reset.

What may be called is decided per definition, never per call: a custom tool's own
approved ``dependencies``, and only tools that sandboxed code may ever call
(the system catalog's ``sandbox_callable``: nothing that starts processes, registers
data sources, installs MCP servers or changes configuration).

The checks themselves run in the registry's gate (registry.gate.sandboxed_caller),
which every call passes: a nested call is just a call whose context carries a scope.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from registry.context import ToolContext
from registry.contract import Envelope, Ok, content_for_data, render_envelope
from registry.contract_coerce import pandas_kind
from registry.models import ToolType
from registry.result import ToolResult
from registry.sandbox.client import Limits

_MIN_WALL_SECONDS = 0.2
# A nested run ends this much before its tree's deadline, so that the run which
# called it still has time to hear why and answer.
_CALLER_MARGIN_SECONDS = 0.5


class Allowance:
    """What one tree of nested runs may still spend; shared by every run in the tree."""

    def __init__(self, wall_seconds: float, cpu_seconds: float, calls: int) -> None:
        self.wall_seconds = wall_seconds
        self.deadline: float | None = None  # set when the tree's first run starts
        self.cpu_left = float(cpu_seconds)
        self.calls_left = calls
        self._lock = threading.Lock()

    def take_call(self) -> bool:
        """Count one call_tool call; False (and nothing counted) when none is left."""
        with self._lock:
            if self.calls_left <= 0:
                return False
            self.calls_left -= 1
            return True

    def spend_cpu(self, seconds: float) -> None:
        with self._lock:
            self.cpu_left -= seconds

    def begin(self) -> None:
        """Start the tree's wall clock (once, when its first run is handed to the zygote)."""
        with self._lock:
            if self.deadline is None:
                self.deadline = time.monotonic() + self.wall_seconds

    def wall_left(self) -> float:
        if self.deadline is None:
            return self.wall_seconds
        return self.deadline - time.monotonic()


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """One run's place in its call tree."""

    depth: int
    allowance: Allowance
    allowed: frozenset[str] | None  # None: any tool sandboxed code may call

    def wall_left(self) -> float:
        """The wall-clock time this run may use: the tree's, less a margin per level above it."""
        return self.allowance.wall_left() - _CALLER_MARGIN_SECONDS * self.depth

    def limits(self, configured: Limits) -> Limits:
        """The deployment's limits for the tree's first run; for a nested run, cut down
        to what the tree has left. Starts the tree's wall clock."""
        allowance = self.allowance
        allowance.begin()
        if self.depth == 0:
            return configured
        return dataclasses.replace(
            configured,
            wall_seconds=max(_MIN_WALL_SECONDS, round(min(configured.wall_seconds, self.wall_left()), 2)),
            cpu_seconds=max(1, min(configured.cpu_seconds, int(allowance.cpu_left))),
            max_tool_calls=max(0, min(configured.max_tool_calls, allowance.calls_left)),
        )


def scope_for(
    context: ToolContext, configured: Limits, allowed: frozenset[str] | None, max_depth: int
) -> tuple[Scope | None, str | None]:
    """The scope of a run started with ``context``, or why it may not start.

    A context without a scope starts a new tree with the deployment's limits;
    one from a sandboxed run continues that run's tree one level deeper.
    """
    caller = context.sandbox
    if not isinstance(caller, Scope):
        fresh = Allowance(configured.wall_seconds, configured.cpu_seconds, configured.max_tool_calls)
        return Scope(0, fresh, allowed), None
    depth, allowance = caller.depth + 1, caller.allowance
    if depth > max_depth:
        return None, f"custom tools may nest at most {max_depth} deep (counting every run that calls tools)"
    if allowance.wall_left() - _CALLER_MARGIN_SECONDS * depth < _MIN_WALL_SECONDS:
        return None, "the calling tool's wall-clock time is spent; the nested run was not started"
    if allowance.cpu_left < 1:
        return None, "the calling tool's CPU time is spent; the nested run was not started"
    return Scope(depth, allowance, allowed), None


def nested_context(context: ToolContext, scope: Scope) -> ToolContext:
    """The context of the calls a run in ``scope`` makes: of its caller's context, who is
    asking, the conversation's catalog and event log, how to cancel, and the caller's own
    rules (``gate``); the registry's gate checks each call against ``scope``."""
    return ToolContext(
        tenant_id=context.tenant_id,
        user_id=context.user_id,
        conversation_id=context.conversation_id,
        cancel=context.cancel,
        gate=context.gate,
        catalog=context.catalog,
        recorder=context.recorder,
        sandbox=scope,
    )


def call_tool_for(context: ToolContext, scope: Scope) -> Callable[[str, dict], str]:
    """The host's ``call_tool`` for a run in ``scope``: the one dispatch path, as the caller."""
    registry = context.registry
    nested = nested_context(context, scope)

    def call_tool(name: str, inputs: dict) -> str:
        if registry is None:
            return "✗ error: call_tool is unavailable here"
        return content_for_data(registry.execute_tool(name, inputs, nested).content)

    return call_tool


class InnerEffects:
    """What a run's inner calls made for the user (cards, datasets, files), handed on
    with the run's own result so that a chart drawn from a program is still shown."""

    def __init__(self) -> None:
        self.cards: list[dict] = []
        self.datasets: dict[str, Any] = {}
        self.exports: dict[str, dict] = {}

    def add(self, result: ToolResult) -> None:
        self.cards.extend(result.cards)
        self.datasets.update(result.datasets)
        self.exports.update(result.exports)


def call_for_data_for(
    context: ToolContext, scope: Scope, effects: InnerEffects | None = None
) -> Callable[[str, dict], dict]:
    """The host's ``call`` for a run in ``scope``: the same path as ``call_tool``; the
    run gets the tool's data (``as_data``) and ``effects`` collects what it made."""
    registry = context.registry
    nested = nested_context(context, scope)

    def call(name: str, inputs: dict) -> dict:
        if registry is None:
            return {"ok": False, "message": "call is unavailable here"}
        result, envelope = registry.execute_for_data(name, inputs, nested)
        if effects is not None and result.ok:
            effects.add(result)
        return as_data(envelope)

    return call


def as_data(envelope: Envelope) -> dict:
    """An envelope as a run reads it: ``{"ok": True, "rows": n, "data": ...}`` with a table
    as a list of row dicts, or ``{"ok": False, "message": ...}`` with the hint or error
    as the model would read it."""
    if not isinstance(envelope, Ok):
        return {"ok": False, "message": render_envelope(envelope)}
    return {"ok": True, "rows": envelope.rows, "data": plain_data(envelope.data)}


def plain_data(data: Any) -> Any:
    """``data`` as JSON values: a DataFrame as row dicts, a Series as a list, dates as ISO text."""
    kind = pandas_kind(data)
    if kind == "DataFrame":
        if type(data.index).__name__ != "RangeIndex":
            data = data.reset_index()
        return json.loads(data.to_json(orient="records", date_format="iso"))
    if kind == "Series":
        return json.loads(data.to_json(orient="values", date_format="iso"))
    return json.loads(json.dumps(data, default=str))


def refusal(registry: Any, name: str, scope: Scope, tenant_id: str) -> str | None:
    """Why sandboxed code in ``scope`` may not call ``name``, or None."""
    if scope.allowed is not None and name not in scope.allowed:
        declared = ", ".join(sorted(scope.allowed)) or "none"
        return (
            f"call_tool({name!r}) is refused: the tool does not declare {name!r} in its dependencies "
            f"(declared: {declared}); declare it and have the tool reviewed again"
        )
    definition = registry.definitions().get(name)
    if definition is None or not definition.callable_by(tenant_id):
        return None  # the registry answers "unknown tool", as it does for anyone
    if not sandbox_callable(definition):
        return (
            f"call_tool({name!r}) is refused: {name!r} can never be called from sandboxed code "
            "(only tools that read or present data may be; none that starts processes, registers "
            "data sources, installs MCP servers or changes configuration)"
        )
    return None


def sandbox_callable(definition: Any) -> bool:
    """Whether sandboxed code may ever call this tool: custom tools (they run in the
    sandbox under the same scope) and the system tools listed as safe; never MCP tools."""
    if definition.tool_type == ToolType.CUSTOM:
        return True
    if definition.tool_type != ToolType.SYSTEM:
        return False
    from registry.system import system_catalog

    return system_catalog().sandbox_callable(definition.name)


def declared_dependencies(definition: Any) -> frozenset[str]:
    """The tool names a custom tool declares it calls (its ``dependencies``).

    Read from the definition when it carries them, else once from its row; names
    that are not strings are ignored.
    """
    declared = getattr(definition, "dependencies", None)
    if declared is None and getattr(definition, "id", None) is not None:
        from registry.models import ToolDefinition

        declared = ToolDefinition.objects.filter(pk=definition.id).values_list("dependencies", flat=True).first()
    return frozenset(name for name in (declared or ()) if isinstance(name, str))

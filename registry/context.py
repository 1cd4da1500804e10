"""The ToolContext: everything a handler is told about the call it serves.

One typed object in place of a dict read by string keys. The caller builds it
(``conversations.runtime.Runtime.tool_context`` for a turn, ``ToolContext(tenant_id=…)``
for the command line, a REST view or a test); the registry adds what only it knows
(``reasoning``, ``registry``, ``tool_name``) with ``for_call``. Ports (registry.ports)
are how a tool reaches the conversation without importing it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from registry.ports import (
    CallGate,
    CancelSignal,
    DataCatalog,
    ProgressReporter,
    QuestionAsker,
    Recorder,
    SubtaskRunner,
)

if TYPE_CHECKING:
    from registry.registry import ToolRegistry


_new = object.__new__
_set = object.__setattr__


def no_progress(message: str, fraction: float | None = None) -> None:
    """Progress of a call nobody is watching."""


class Budget:
    """What a turn (or a task it delegated) has spent, its own tasks' spending included.

    A delegated task has a budget of its own whose ``parent`` is its delegator's: what
    the task spends counts against its own limit and against every budget above it,
    never against a sibling's. ``spend`` may be called from any thread.
    """

    __slots__ = ("spent", "parent", "_lock")

    def __init__(self, spent: float = 0.0, parent: Budget | None = None) -> None:
        self.spent = spent
        self.parent = parent
        self._lock = threading.Lock()

    def spend(self, usd: float) -> None:
        with self._lock:
            self.spent += usd
        if self.parent is not None:
            self.parent.spend(usd)

    def __repr__(self) -> str:
        return f"Budget(spent={self.spent!r})"


@dataclass(frozen=True)
class ToolContext:
    """Who calls, from where, and what the call may reach. Immutable (``dataclasses.replace`` for a variant)."""

    tenant_id: str
    user_id: str = ""  # a user's primary key, or a username (call_tool --user)
    conversation_id: str | None = None
    namespace_id: str = ""
    mode: str = "chat"
    capabilities: frozenset[str] = frozenset()
    tool_use_id: str = ""
    depth: int = 0  # 0 for the user's own turn, 1 inside a delegated task
    progress: ProgressReporter = no_progress
    cancel: CancelSignal | None = None
    budget: Budget = field(default_factory=Budget)
    budget_limit: float | None = None
    # The conversation's datasets so far, by name (earlier tools' ``datasets`` side channel).
    datasets: Mapping[str, Any] = field(default_factory=dict)
    # Ports the caller offers (None: it cannot).
    catalog: DataCatalog | None = None
    recorder: Recorder | None = None
    subtasks: SubtaskRunner | None = None
    questions: QuestionAsker | None = None
    gate: CallGate | None = None
    # Set by the sandbox for the calls a sandboxed run makes (registry.sandbox.bridge.Scope).
    sandbox: Any = None
    # Set by the host for the run of a call a person approved (registry.approvals).
    approval_id: str = ""
    # Told a call's approval card when it waits for a person, by a caller with no gate of
    # its own to tell (the MCP endpoint sends the person to the approval's page).
    awaiting: Callable[[dict], None] | None = None
    # Why the tool was on the surface the model called it from (registry.surface: anchor,
    # usage, working_set, …); "" for a call no model surface is behind. Told to traces only.
    surface_reason: str = ""
    # Set by the registry for the call.
    tool_name: str = ""
    reasoning: str | None = None
    registry: ToolRegistry | None = None

    def __post_init__(self) -> None:
        # Every field in one compact dict of the instance's own. ``for_call`` copies it on
        # every call, and CPython copies such a dict as one block (a dict with entries
        # deleted, or one still sharing its keys with the class, is copied entry by entry);
        # and a field found in it is read several times faster than one that falls through
        # to the class, or than one in a dict that shares its keys.
        _set(self, "__dict__", dict(self.__dict__))

    def for_tool_call(
        self,
        tool_use_id: str,
        progress: ProgressReporter,
        cancel: CancelSignal | None,
        gate: CallGate | None,
        surface_reason: str,
    ) -> ToolContext:
        """This context for one tool call of a turn: the turn's fields kept, the call's own set.
        A copy of one dict where ``ToolContext(...)`` runs ``__init__`` over every field."""
        fields = dict(self.__dict__)
        fields["tool_use_id"], fields["progress"], fields["cancel"] = tool_use_id, progress, cancel
        fields["gate"], fields["surface_reason"] = gate, surface_reason
        made = _new(ToolContext)
        _set(made, "__dict__", fields)
        return made

    def for_call(self, registry: ToolRegistry, name: str, reasoning: str | None) -> ToolContext:
        """This context as the registry hands it to ``name``'s handler."""
        # Not dataclasses.replace: that re-runs __init__, and this is on every call's path.
        made = _new(ToolContext)
        fields = made.__dict__
        fields.update(self.__dict__)
        fields["registry"], fields["tool_name"], fields["reasoning"] = registry, name, reasoning
        return made

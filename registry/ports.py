"""The ports: what a tool may ask of the conversation that called it, as Protocols.

``registry`` declares them, ``conversations`` implements them (``conversations.ports``)
and ``tools`` sees them only through a ``ToolContext``. A port that is None on a
context is one its caller cannot offer (no conversation, nobody to ask, a call from
the command line); the tool says so in band.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from registry.context import ToolContext
    from registry.contract import Err


class CancelSignal(Protocol):
    """The caller's cancel token: a running tool may look, a sandboxed run is killed."""

    @property
    def cancelled(self) -> bool: ...


class Recorder(Protocol):
    """The conversation's event log (batched; written by the caller)."""

    def record(self, kind: str, data: dict) -> None: ...


ProgressReporter = Callable[..., None]  # report(message, fraction=None), from any thread


class DataCatalog(Protocol):
    """The conversation's datasets, scoped to its tenant."""

    @property
    def tenant_id(self) -> str: ...

    @property
    def conversation_id(self) -> str: ...

    def names(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class ConversationFacts:
    """What a tool reads of a conversation of its tenant."""

    id: str
    title: str
    plan: dict


@dataclass(frozen=True, slots=True)
class ConversationChoice:
    """One of a user's own conversations, as a staff page offers it to pick."""

    id: str
    title: str
    tenant_id: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation: ``user`` or ``assistant``, and its text."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One event of a conversation's log, as recorded."""

    turn: int
    sequence: int
    event_type: str
    created_at: datetime
    data: dict
    conversation_id: str = ""


class ConversationRecords(Protocol):
    """A tenant's conversations as the data catalog and the tools read them (their
    existence, plan, messages and event log), installed by ``conversations``."""

    def exists(self, tenant_id: str, conversation_id: str) -> bool: ...

    def find(self, tenant_id: str, conversation_id: str) -> ConversationFacts | None: ...

    def readable(self, context: ToolContext, conversation_id: str) -> bool:
        """Whether the caller may read ``conversation_id``: the one they are in, one of
        their own, or (staff) any of their tenant's."""

    def save_plan(self, tenant_id: str, conversation_id: str, plan: dict) -> None: ...

    def recent_of(self, user: Any, limit: int) -> list[ConversationChoice]:
        """``user``'s own live conversations in their tenant, the most recently active
        first, at most ``limit`` (the chat's rule: nobody else's, staff included)."""

    def one_of(self, user: Any, conversation_id: str) -> ConversationChoice | None:
        """``conversation_id`` if it is one ``recent_of`` could list; None otherwise (no hint why)."""

    def messages(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first."""

    def events(
        self,
        conversation_id: str,
        kinds: Sequence[str] = (),
        *,
        newest_first: bool = False,
        limit: int | None = None,
        with_blobs: bool = True,
    ) -> list[LoggedEvent]:
        """The conversation's events (of ``kinds``, or all), in order or newest first; an
        event kept in a blob is read whole only ``with_blobs``, else its inline stub."""

    def tenant_events(self, tenant_id: str, *, since: datetime | None, limit: int) -> list[LoggedEvent]:
        """The newest events of every conversation of ``tenant_id`` (since ``since``), at
        most ``limit``, each with its ``conversation_id``; inline stubs, never blobs."""

    def note_observation(self, *, tenant_id: str, user_id: str, kind: str, text: str) -> int:
        """Record (or reinforce) a note of how the person works; how often it has been
        noted. Raises ValueError for an unknown kind, a blank note or no person."""


@dataclass(frozen=True, slots=True)
class SubtaskOutcome:
    """How a delegated task ended: its answer, why it stopped, what it cost."""

    text: str
    stop_reason: str
    cost_usd: float

    @property
    def finished(self) -> bool:
        """Whether the helper ended its answer itself (not stopped by budget, call cap, error)."""
        return self.stop_reason == "end_turn"


class SubtaskRunner(Protocol):
    """Runs a task as a sub-agent of the calling turn (its events, budget and depth)."""

    async def run(self, task: str, *, budget_usd: float | None, label: str = "") -> SubtaskOutcome:
        """Run ``task`` to its end; ``label`` names its pane (default: "Helper N")."""

    def note_unfinished(self, task: str, stopped: str) -> None:
        """Remember a task that stopped early, for the turn's completion guardrail."""


class QuestionAsker(Protocol):
    """Asks the person on the conversation's socket; only offered when someone is there."""

    async def ask(self, question: str, choices: list[str], timeout: float) -> str | None:
        """The person's answer, or None when none came within ``timeout`` seconds."""

    async def elicit(self, request: Any, timeout: float) -> dict | None:
        """The person's answer to an MCP server's request for input (``registry.mcp.elicitation.
        Elicitation``): ``{"action": "accept"|"decline"|"cancel", "content": {...}}``, or None
        when none came within ``timeout`` seconds. Callable from any event loop."""


class CallGate(Protocol):
    """The caller's own rules for a call, run by the registry's gate before anything else
    (the conversation's loop guard and policy rules). None lets the call through.

    A gate may also have ``planned(tool_use_id) -> bool``: True when its ``check`` of
    that call only reads back a verdict made beforehand, with no query, so the registry
    may run it on the caller's event loop (``registry.gate.concerns_without_a_query``)."""

    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None: ...

    def awaiting(self, card: dict) -> None:
        """A call of the caller's now waits for a person's approval (``card`` shows it):
        the caller shows it and pauses once the calls under way have answered."""


class TenantPolicy(Protocol):
    """The tenant's own rules for a call that carries no ``CallGate`` (the command line,
    the playground, a REST view, the MCP endpoint), installed by ``conversations``:
    the policy rules, judged with no conversation behind the call."""

    def ruled_tools(self) -> frozenset[str]:
        """The tools some tenant's enabled rule names (the gate keeps it for a moment)."""
        ...

    def rules_tool(self, name: str, tenant_id: str) -> bool:
        """Whether an enabled rule of the tenant's (or of every tenant's) names tool ``name``."""
        ...

    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None: ...


class SystemCatalog(Protocol):
    """The system tools of this deployment, installed by the ``tools`` app when it is ready."""

    def entries(self) -> list[dict[str, Any]]:
        """The enabled tools (feature flags applied), in order."""

    def all_entries(self) -> list[dict[str, Any]]:
        """Every system tool, enabled or not."""

    def retired(self) -> list[str]: ...

    def flag_of(self, name: str) -> str | None:
        """The feature flag that turns ``name`` off, if one does."""

    def sandbox_callable(self, name: str) -> bool: ...


class SkillShelf(Protocol):
    """A tenant's approved skills as every model call is told of them (the Agent Skills
    progressive disclosure: name and description resident, the body on ``use_skill``),
    installed by the ``tools`` app."""

    def resident(self, tenant_id: str, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (name, description) pairs of the tenant's skills usable as they
        are now, by name."""


class WorkingSet(Protocol):
    """The tools a conversation (or one of its namespaces) has paged in, installed by
    ``conversations`` (registry.surface reads and extends it)."""

    def names(self, conversation_id: str, namespace_id: str) -> list[str]:
        """The paged-in tool names, least recently used first."""

    def add(self, conversation_id: str, namespace_id: str, names: list[str], query: str) -> None:
        """Page ``names`` in (those already there are left as they are)."""

    def touch(self, conversation_id: str, namespace_id: str, names: list[str]) -> None:
        """Mark those of ``names`` that are paged in as used now (others are ignored)."""

    def evict(self, conversation_id: str, namespace_id: str, names: list[str]) -> None:
        """Page ``names`` out."""

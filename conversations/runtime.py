"""One run of a conversation: who is asking, where effects go, what it has cost."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from django.conf import settings

from conversations.capabilities import capabilities_for
from conversations.effects import EffectContext, EffectLog, RecordingDisplay, RecordingRecorder
from conversations.models import Conversation
from conversations.ports import Questions, Subtasks
from conversations.prompt import TokenEstimator
from conversations.recording import EventRecorder, ListDisplay, persist_message
from conversations.state import CostTracker
from datacatalog.store import ConversationCatalog
from registry.context import Budget, ToolContext
from registry.ports import CallGate, CancelSignal
from registry.registry import ToolRegistry, get_registry
from registry.system import resident_skills

# How many of the tenant's skills every model call is told of by name and description.
RESIDENT_SKILLS = 10


@dataclass
class Runtime:
    registry: ToolRegistry
    conversation: Conversation
    turn: int
    log: EffectLog
    user: Any = None
    capabilities: frozenset[str] = frozenset()
    mode: str = "chat"
    user_message: str = ""
    user_message_id: str = ""  # the stored row of the turn's message (its history leaves it out)
    parallel_limit: int = 4
    cost: CostTracker = field(default_factory=CostTracker)
    datasets: dict[str, Any] = field(default_factory=dict)
    cards: list[dict] = field(default_factory=list)
    budget: Budget = field(default_factory=Budget)  # a delegated task's is its own, its parent's above it
    budget_limit: float | None = None  # on ``budget.spent``: what this run and its own tasks spent
    interactive: bool = False  # a person is on a websocket and can answer questions
    depth: int = 0  # 0 for the user's own turn, 1 inside a delegated task
    # Whose working set the run pages tools into and is offered: the conversation's
    # (its namespace), or a delegated task's own.
    working_set_scope: str = ""
    # A delegated task's own plan; None: the conversation's (``conversation.plan``).
    task_plan: dict | None = None
    # Numbers the tasks this run delegates (their ``subtask`` ids).
    delegated: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    # Delegated tasks of this run that stopped before finishing ({"task", "stopped"}),
    # not yet put to the model by the completion guardrail.
    failed_delegations: list[dict] = field(default_factory=list)
    # Calls of this turn waiting for a person's approval (their cards): the turn pauses.
    awaiting: list[dict] = field(default_factory=list)
    # Measures tool results for the result budget; the loop puts its calibrated one here.
    estimator: TokenEstimator = field(default_factory=TokenEstimator)
    # The conversation's held results (conversations.result_budget), read once per run.
    _held: dict[str, str] | None = None
    # The tenant's skills kept resident in the state block, read once per run.
    _skills: list[tuple[str, str]] | None = None
    # The tool context's fields that every call of the run shares, and what they were
    # made from (``_shared_context``). Not an __init__ argument: a delegated task's
    # runtime (``dataclasses.replace`` of its parent's) starts without its parent's.
    _shared: tuple[tuple, ToolContext] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def tenant_id(self) -> str:
        return self.conversation.tenant_id

    @property
    def user_id(self) -> str:
        return str(self.user.pk) if self.user is not None else ""

    @property
    def catalog(self) -> ConversationCatalog:
        """The conversation's datasets (scoped to its tenant); building it costs no query."""
        return ConversationCatalog(self.tenant_id, self.conversation.pk)

    def resident_skills(self) -> list[tuple[str, str]]:
        """The tenant's usable skills (name, description) for the state block, read once per run."""
        if self._skills is None:
            self._skills = resident_skills(self.tenant_id, RESIDENT_SKILLS)
        return self._skills

    def held_results(self) -> dict[str, str]:
        """The conversation's results kept whole as datasets: name → "TOOL, N tokens".
        Read on first use (one query), then kept up to date by the result budget."""
        if self._held is None:
            from conversations.result_budget import held_results

            self._held = held_results(self.tenant_id, str(self.conversation.pk))
        return self._held

    @property
    def recorder(self) -> RecordingRecorder:
        return RecordingRecorder(self.log)

    @property
    def display(self) -> RecordingDisplay:
        return RecordingDisplay(self.log)

    def flush_events(self) -> None:
        """Write the events recorded so far (the turn's recorder batches them). Database work."""
        flush = getattr(self.log.ctx.recorder, "flush", None)
        if flush is not None:
            flush()

    @property
    def events_pending(self) -> bool:
        """Whether events are waiting for ``flush_events``."""
        return bool(getattr(self.log.ctx.recorder, "pending", 0))

    def progress_reporter(self, tool_use_id: str, name: str):
        """``report(message, fraction=None)`` for a running tool: a ``progress`` chunk
        on the user's display, from any thread. ``fraction`` is clamped to [0, 1]."""

        def report(message: str, fraction: float | None = None) -> None:
            chunk: dict[str, Any] = {
                "type": "progress",
                "tool_use_id": tool_use_id,
                "name": name,
                "message": str(message)[:500],
            }
            if fraction is not None:
                chunk["fraction"] = min(1.0, max(0.0, float(fraction)))
            self.display.send(chunk)

        return report

    def tool_context(
        self,
        tool_use_id: str,
        name: str,
        cancel: CancelSignal | None = None,
        gate: CallGate | None = None,
        surface_reason: str = "",
    ) -> ToolContext:
        """The context a handler receives (the registry adds reasoning, registry and tool_name)."""
        progress = self.progress_reporter(tool_use_id, name)
        return self._shared_context().for_tool_call(tool_use_id, progress, cancel, gate, surface_reason)

    def _shared_context(self) -> ToolContext:
        """The fields of ``tool_context`` that are the run's, not the call's: built at the
        run's first call, and again should any field they are made of be set anew."""
        # The objects themselves (a dict, the budget, the log) by identity: the context
        # holds views of them, not copies; the rest compare by value.
        made_of = (
            self.conversation,
            self.user,
            self.working_set_scope,
            self.mode,
            self.capabilities,
            self.depth,
            self.budget,
            self.budget_limit,
            id(self.datasets),  # the context's view keeps the dict, so no other can take its id
            self.log,
            self.interactive,
        )
        shared = self._shared
        if shared is not None and shared[0] == made_of:
            return shared[1]
        context = ToolContext(
            tenant_id=self.tenant_id,
            user_id=self.user_id,
            conversation_id=self.conversation.pk,
            namespace_id=self.working_set_scope,
            mode=self.mode,
            capabilities=self.capabilities,
            depth=self.depth,
            budget=self.budget,
            budget_limit=self.budget_limit,
            datasets=MappingProxyType(self.datasets),
            catalog=self.catalog,
            recorder=self.recorder,
            subtasks=Subtasks(self),
            questions=Questions(self) if self.interactive else None,
        )
        self._shared = (made_of, context)
        return context


def start_run(
    conversation: Conversation,
    *,
    user: Any = None,
    turn: int,
    display: Any = None,
    mode: str | None = None,
    user_message: str = "",
    interactive: bool = False,
) -> Runtime:
    """A runtime whose effects go to the conversation's tables and ``display``."""
    ctx = EffectContext(
        recorder=EventRecorder(conversation, turn),
        display=display if display is not None else ListDisplay(),
        persister=persist_message,
    )
    return Runtime(
        registry=get_registry(),
        conversation=conversation,
        turn=turn,
        log=EffectLog(ctx),
        user=user,
        capabilities=capabilities_for(user),
        mode=mode or conversation.mode,
        user_message=user_message,
        working_set_scope=conversation.namespace_id,
        parallel_limit=settings.EUNICE_PARALLEL_TOOLS,
        interactive=interactive,
    )

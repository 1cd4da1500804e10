"""Per-run state the dispatcher keeps: what ran, what failed, what repeats, cancel."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count
from django.utils import timezone

from conversations.models import Conversation
from eunice.db.prepared import Prepared

_tokens: dict[str, set[CancelToken]] = {}
_calls: dict[tuple[str, str], CallCancel] = {}  # (conversation id, tool_use id) -> a running call's cancel
_tokens_lock = threading.Lock()


class CancelToken:
    """Set when the user cancels; a running tool or stream is raced against it.

    ``cancel`` may be called from any thread; coroutines waiting in ``wait``
    wake at once (no polling: a few hundred running turns would otherwise
    wake the event loop thousands of times a second to look at a flag).
    """

    def __init__(self, conversation_id: str | None = None) -> None:
        self._event = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._lock = threading.Lock()
        self.conversation_id = conversation_id
        if conversation_id:
            with _tokens_lock:
                _tokens.setdefault(conversation_id, set()).add(self)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # that loop has closed: nobody is waiting any more
                pass

    def release(self) -> None:
        if self.conversation_id:
            with _tokens_lock:
                _tokens.get(self.conversation_id, set()).discard(self)

    async def wait(self) -> None:
        """Return once cancelled."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            if self._event.is_set():
                return
            self._waiters.append((loop, future))
        try:
            await future
        finally:
            with self._lock:
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class CallCancel:
    """One tool call's cancel: set by a cancel of that call or of its whole turn.

    The handler's ``context.cancel`` (a sandboxed run polls it and is killed);
    ``own`` is what the dispatcher races the call against besides the turn's token.
    """

    def __init__(self, turn: CancelToken, conversation_id: str, tool_use_id: str) -> None:
        self.turn, self.own = turn, CancelToken()
        self._key = (conversation_id, tool_use_id)
        with _tokens_lock:
            _calls[self._key] = self

    @property
    def cancelled(self) -> bool:
        return self.own.cancelled or self.turn.cancelled

    def release(self) -> None:
        with _tokens_lock:
            if _calls.get(self._key) is self:
                del _calls[self._key]


def cancel_tool_call(conversation_id: str, tool_use_id: str) -> bool:
    """Cancel one tool call of the conversation if it runs in this process; whether it did.

    No database work and no lock held long: the caller answers the user at once.
    The call's result becomes ``Cancelled`` and its turn goes on with the others.
    """
    with _tokens_lock:
        call = _calls.get((conversation_id, tool_use_id))
    if call is None:
        return False
    call.own.cancel()
    return True


def cancel_running(conversation_id: str) -> None:
    """Cancel the conversation's live tokens in this process: no database work, so the
    caller can answer at once (``request_cancel`` then raises the flag for other processes)."""
    with _tokens_lock:
        tokens = list(_tokens.get(conversation_id, ()))
    for token in tokens:
        token.cancel()


def request_cancel(conversation: Conversation) -> None:
    """Cancel whatever the conversation is running: live tokens in this process, and its flag."""
    cancel_running(conversation.pk)
    conversation.cancel_requested_at = timezone.now()
    Conversation.objects.filter(pk=conversation.pk).update(cancel_requested_at=conversation.cancel_requested_at)


def clear_cancel(conversation: Conversation) -> None:
    """Lower the cancel flag before a new turn. Nothing to write when ``conversation``
    (read just before, as the consumer and the API do) shows it down."""
    if conversation.cancel_requested_at is None:
        return
    Conversation.objects.filter(pk=conversation.pk).update(cancel_requested_at=None)
    conversation.cancel_requested_at = None


@dataclass
class CostTracker:
    total: float = 0.0
    by_source: Counter = field(default_factory=Counter)

    def add(self, source: str, cost: float) -> None:
        if cost:
            self.total += cost
            self.by_source[source] += cost


def _calls_by_outcome(conversation_id: str) -> Any:
    from registry.models import ToolExecutionLog

    return (
        ToolExecutionLog.objects.filter(conversation_id=conversation_id)
        .order_by()
        .values_list("tool_name", "outcome")
        .annotate(n=Count("id"))
    )


# The conversation's calls of each tool by outcome; composed once (every turn reads it).
_CALLS_BY_OUTCOME: Prepared[tuple[str, str, int]] = Prepared(_calls_by_outcome)


@dataclass
class DispatchState:
    """What the dispatcher remembers about one conversation while it runs."""

    conversation: Conversation
    cancel: CancelToken
    failed_approaches: list[dict[str, Any]] = field(default_factory=list)
    succeeded_tools: set[str] = field(default_factory=set)
    calls_by_tool: Counter = field(default_factory=Counter)
    last_hash: str | None = None
    repeat_count: int = 0

    @classmethod
    def for_conversation(cls, conversation: Conversation) -> DispatchState:
        """State seeded from the conversation's record (its log and failed approaches)."""
        from registry.execlog import writer
        from registry.models import Outcome

        # The log's rows of this conversation not yet written are counted from memory, held
        # back from its writer while the table is read: nothing is written (nor waited for)
        # at turn start unless a batch being written holds one of them.
        with writer().unwritten(conversation.pk) as unwritten:
            written = _CALLS_BY_OUTCOME(conversation.pk)  # one query for both figures
        calls: Counter = Counter()
        succeeded: set[str] = set()
        for name, outcome, count in itertools.chain(written, ((name, outcome, 1) for name, outcome in unwritten)):
            calls[name] += count
            if outcome == Outcome.OK:
                succeeded.add(name)
        return cls(
            conversation=conversation,
            cancel=CancelToken(conversation.pk),
            failed_approaches=list(conversation.failed_approaches or []),
            succeeded_tools=succeeded,
            calls_by_tool=calls,
        )

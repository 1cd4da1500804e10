"""A turn's reservation: the row that says a turn runs, who runs it, and how it ended.

A turn is reserved before anything of it happens: ``reserve_turn`` takes the
next number and marks it ``running`` in one transaction, under the
conversation's row lock (PostgreSQL) and two unique constraints (one number
once; one running turn per conversation), so two messages at once, in one
process or in two, cannot both start a turn: the second is refused with
``TurnInProgress``, which names the running turn.

A running turn belongs to a server process (``OWNER``: host, pid and a token
drawn at start-up) that beats its heartbeat while the turn lasts. A turn
whose process is gone (a pid no longer running on this host, a token of an
earlier process with this pid, or a heartbeat older than
``EUNICE_TURN_STALE_SECONDS``) is dead: the next message on the conversation,
a page drawn or a cancel (``close_if_dead``), the server's start-up, or the
sweep every minute (``close_dead_turns``) closes it as *interrupted*.
Closing keeps what the turn recorded: its events become its effects, so
replay rebuilds it like any other, and an ``interrupted`` event says why.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import threading
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from conversations import runs
from conversations.inserts import insert_rows
from conversations.models import (
    ChatMessage,
    Conversation,
    ConversationEvent,
    TurnRecord,
)
from eunice.db.prepared import Prepared

logger = logging.getLogger("eunice.conversations")

HOST = socket.gethostname()
TOKEN = uuid.uuid4().hex[:12]
OWNER = f"{HOST}:{os.getpid()}:{TOKEN}"
GONE = "the server stopped while this turn was running"  # why a dead process's turn was closed

_running_here: set[tuple[str, int]] = set()  # (conversation id, turn) reserved by this process
_running_lock = threading.Lock()


class TurnInProgress(Exception):
    """A turn of the conversation is running; a new message must wait for it (or cancel it)."""

    def __init__(self, conversation_id: str, turn: int | None) -> None:
        self.conversation_id, self.turn = conversation_id, turn
        which = f"turn {turn}" if turn is not None else "another turn"
        super().__init__(
            f"{which} of this conversation is still running; wait for its answer or cancel it, "
            "then send your message again"
        )


# Composed once (eunice.db.prepared): every turn reads both. The first is the cancel
# flag (its row locked where the database locks rows) and, in the same statement, the
# highest turn that has events.
_LOCKED_FLAG: Prepared[tuple[Any, int | None]] = Prepared(
    lambda pk: (
        Conversation.objects.select_for_update()
        .filter(pk=pk)
        .order_by()
        .values_list(
            "cancel_requested_at",
            Subquery(
                ConversationEvent.objects.filter(conversation_id=OuterRef("pk")).order_by("-turn").values("turn")[:1]
            ),
        )
    )
)
_LATEST: Prepared[TurnRecord] = Prepared(
    lambda pk: TurnRecord.objects.filter(conversation_id=pk).defer("effects").order_by("-turn")[:1]
)
_LOCK_USER: Prepared[int] = Prepared(
    lambda user_id: _user_model().objects.select_for_update().filter(pk=user_id).order_by().values_list("pk", flat=True)
)
_RUNNING_ELSEWHERE: Prepared[TurnRecord] = Prepared(  # the user's running turns in their other conversations
    lambda user_id, pk: (
        TurnRecord.objects.filter(conversation__user_id=user_id, status=TurnRecord.Status.RUNNING)
        .exclude(conversation_id=pk)
        .only("conversation_id", "turn", "owner", "heartbeat_at")
    )
)


def _user_model() -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model()


def reserve_turn(conversation: Conversation) -> int:
    """The number of the turn now reserved for ``conversation``; raises TurnInProgress,
    or ``runs.RunCapReached`` when the user's turns running in any process fill the cap.

    Runs inside the caller's transaction (``begin_turn``'s), which it requires:
    the reservation commits with the turn's first message and event. The
    conversation's cancel flag (an earlier turn's) is lowered once the turn is
    reserved, never for a message that is refused (the running turn keeps it).
    """
    flags = _LOCKED_FLAG(conversation.pk)
    flag, last_event_turn = flags[0] if flags else (None, None)
    # A running turn is always the latest: one query finds both it and the last number.
    latest = next(iter(_LATEST(conversation.pk)), None)
    if latest is not None and latest.status == TurnRecord.Status.RUNNING:
        if is_alive(latest):
            raise TurnInProgress(conversation.pk, latest.turn)
        close_dead_turn(latest, GONE)
    if conversation.user_id is not None:
        _check_run_cap(conversation, conversation.user_id)
    turn = (latest.turn if latest is not None else 0) + 1
    # Turns closed before reservations existed (or broken by them) left events under
    # numbers with no record: never reuse one.
    if last_event_turn is not None and last_event_turn >= turn:
        turn = last_event_turn + 1
    insert_rows(
        [
            TurnRecord(
                conversation=conversation,
                turn=turn,
                status=TurnRecord.Status.RUNNING,
                owner=OWNER,
                heartbeat_at=timezone.now(),
            )
        ]
    )
    with _running_lock:
        _running_here.add((conversation.pk, turn))
    if flag is not None:  # a cancel of an earlier turn must not stop this one
        Conversation.objects.filter(pk=conversation.pk).update(cancel_requested_at=None)
    conversation.cancel_requested_at = None
    return turn


def _check_run_cap(conversation: Conversation, user_id: int) -> None:
    """Raise RunCapReached when the user's turns running in any process fill the cap.

    The user's row is locked first (PostgreSQL; SQLite takes one writer at a time), so
    two processes reserving turns for one user count one after the other. Dead turns
    (their process gone) do not count; they are closed when their conversation is next
    used or at start-up.
    """
    from django.db import connection

    cap = settings.EUNICE_MAX_RUNS_PER_USER
    if connection.features.has_select_for_update:  # elsewhere the query would lock nothing
        _LOCK_USER(user_id)
    running = _RUNNING_ELSEWHERE(user_id, conversation.pk)  # its own running turn is TurnInProgress
    if sum(1 for record in running if is_alive(record)) >= cap:
        raise runs.RunCapReached


def refused_reservation(conversation: Conversation, error: IntegrityError) -> TurnInProgress:
    """What a reservation that lost a race to another process's is: that turn running.
    Re-raises ``error`` when no turn runs (the constraint that failed was another)."""
    running = (
        TurnRecord.objects.filter(conversation=conversation, status=TurnRecord.Status.RUNNING)
        .values_list("turn", flat=True)
        .first()
    )
    if running is None:
        raise error
    return TurnInProgress(conversation.pk, running)


def released(conversation_id: str, turn: int) -> None:
    """The turn is closed (finished or interrupted): no longer this process's to run."""
    with _running_lock:
        _running_here.discard((conversation_id, turn))


def is_alive(record: TurnRecord) -> bool:
    """Whether the process that reserved ``record`` is still running it."""
    if record.owner == OWNER:
        with _running_lock:
            return (record.conversation_id, record.turn) in _running_here
    host, _, rest = record.owner.partition(":")
    pid = rest.partition(":")[0]
    # This pid with another token is an earlier process that had this pid: gone.
    if host == HOST and pid.isdigit() and (int(pid) == os.getpid() or not _pid_running(int(pid))):
        return False
    stale = timezone.now() - timedelta(seconds=settings.EUNICE_TURN_STALE_SECONDS)
    return record.heartbeat_at is not None and record.heartbeat_at > stale


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def beat() -> int:
    """Say this process still runs its turns: one UPDATE for all of them; how many rows it renewed."""
    with _running_lock:
        conversations = [conversation_id for conversation_id, _ in _running_here]
    if not conversations:
        return 0
    # One running turn per conversation (a unique constraint), and this process's own.
    return TurnRecord.objects.filter(
        conversation_id__in=conversations, owner=OWNER, status=TurnRecord.Status.RUNNING
    ).update(heartbeat_at=timezone.now())


_beating: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}


def keep_beating() -> None:
    """Make sure the running loop beats this process's turns (call when a turn starts; on the loop).

    One task per loop renews every running turn every ``EUNICE_TURN_HEARTBEAT_SECONDS``
    in one statement, and ends once no turn runs. A task per turn cost a database
    thread hop and an UPDATE per turn per period: at 400 turns, 40 of each a second.
    """
    loop = asyncio.get_running_loop()
    task = _beating.get(loop)
    if task is None or task.done():
        task = _beating[loop] = loop.create_task(_heartbeat())
        task.add_done_callback(lambda done: _beating.pop(loop, None) if _beating.get(loop) is done else None)


async def _heartbeat() -> None:
    from registry.aio import in_db_thread

    while True:
        await asyncio.sleep(settings.EUNICE_TURN_HEARTBEAT_SECONDS)
        with _running_lock:
            if not _running_here:
                return  # the next turn to start begins another
        try:
            await in_db_thread(beat)()
        except Exception:  # a missed beat is retried at the next; the turns go on
            logger.warning("could not beat the heartbeat of this process's turns", exc_info=True)


def close_dead_turn(record: TurnRecord, reason: str) -> bool:
    """Close a turn whose process is gone as interrupted, from what it recorded.

    Its events (in order) become its effects, an ``interrupted`` event ends
    them, and the text its model calls had produced is kept as a partial
    answer. False when another closer got there first (nothing written)."""
    with transaction.atomic():
        claimed = TurnRecord.objects.filter(pk=record.pk, status=TurnRecord.Status.RUNNING).update(
            status=TurnRecord.Status.INTERRUPTED, interrupted_reason=reason[:300]
        )
        if not claimed:
            return False
        events = list(
            ConversationEvent.objects.filter(conversation_id=record.conversation_id, turn=record.turn)
            .select_related("blob")
            .order_by("sequence")
        )
        ending = {"turn": record.turn, "reason": reason[:300]}
        effects = [_telemetry(e.event_type, e.data, bytes(e.blob.data) if e.blob else None) for e in events]
        effects.append(_telemetry("interrupted", ending))
        insert_rows(
            [
                ConversationEvent(
                    conversation_id=record.conversation_id,
                    turn=record.turn,
                    sequence=(events[-1].sequence if events else 0) + 1,
                    event_type="interrupted",
                    data=ending,
                )
            ]
        )
        partial = "".join(e.data.get("text", "") for e in events if e.event_type == "text_delta")
        if partial.strip():
            effects.append(_partial_answer(record, partial))
            message = effects[-1]
            insert_rows(
                [
                    ChatMessage(
                        conversation_id=record.conversation_id,
                        message_id=message["message_id"],
                        tenant_id=message["tenant_id"],
                        role=ChatMessage.Role.ASSISTANT,
                        text=partial,
                    )
                ]
            )
        TurnRecord.objects.filter(pk=record.pk).update(effects=effects)
    logger.warning("turn %s of conversation %s closed as interrupted: %s", record.turn, record.conversation_id, reason)
    return True


def _telemetry(event_type: str, data: dict, blob: bytes | None = None) -> dict:
    return {
        "kind": "TelemetryEvent",
        "event_type": event_type,
        "data": data,
        "blob": base64.b64encode(blob).decode() if blob is not None else None,
    }


def _partial_answer(record: TurnRecord, text: str) -> dict:
    tenant = Conversation.objects.filter(pk=record.conversation_id).values_list("tenant_id", flat=True).first()
    return {
        "kind": "PersistAssistantMessage",
        "message_id": uuid.uuid4().hex,
        "conversation_id": record.conversation_id,
        "tenant_id": tenant or "",
        "final_text": text,
        "structured_content": [],
        "cards": [],
        "cost_usd": 0.0,
    }


def close_running_turn(conversation_id: str, reason: str = "the server stopped before this turn finished") -> bool:
    """Close the conversation's running turn as interrupted (the server's stop, after
    its grace); False when there is none, or the turn closed itself meanwhile."""
    record = TurnRecord.objects.filter(conversation_id=conversation_id, status=TurnRecord.Status.RUNNING).first()
    return record is not None and close_dead_turn(record, reason)


def close_if_dead(conversation_id: str) -> bool:
    """Close the conversation's running turn as interrupted if its process is gone; whether
    it did. For whoever looks at the turn (a page drawn, a cancel): a process killed on
    another host leaves its turn running until someone does, and a page would show it
    running, with Send disabled, for good."""
    record = TurnRecord.objects.filter(conversation_id=conversation_id, status=TurnRecord.Status.RUNNING).first()
    return record is not None and not is_alive(record) and close_dead_turn(record, GONE)


def close_dead_turns() -> list[str]:
    """Close every running turn whose process is gone (the server's start-up, and a sweep
    every minute: ``cancels.sweep_dead_turns``); the ids of their conversations."""
    running = TurnRecord.objects.filter(status=TurnRecord.Status.RUNNING).only(
        "conversation_id", "turn", "owner", "heartbeat_at"
    )
    return [record.conversation_id for record in running if not is_alive(record) and close_dead_turn(record, GONE)]


def close_dead_turns_at_start_up() -> None:
    """``close_dead_turns``, logged, on a thread of its own: the server may import the app
    inside its event loop (``eunice.serve``), where Django refuses database work, and the
    thread's connection is closed with it. A database that cannot answer yet is no reason
    not to start (each conversation's next message closes its own dead turn)."""
    worker = threading.Thread(target=_close_dead_turns_logged, name="eunice-close-dead-turns")
    worker.start()
    worker.join()


def _close_dead_turns_logged() -> None:
    from django.db import DatabaseError, connection

    try:
        closed = close_dead_turns()
    except DatabaseError:
        logger.warning("could not close the turns a stopped server left running", exc_info=True)
        return
    finally:
        connection.close()
    if closed:
        logger.warning("closed %d turn(s) a stopped server left running", len(closed))

"""The real services effects are applied to: the event table and the message table."""

from __future__ import annotations

import json
import threading
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Field

from conversations.effects import PersistAssistantMessage
from conversations.models import ChatMessage, Conversation, ConversationEvent, ConversationEventBlob

INLINE_LIMIT = 32 * 1024  # bytes of JSON kept inline; larger payloads go to a blob


class EventRecorder:
    """Numbers a turn's events in order and writes them in batches.

    ``record`` only queues the row (no query, so it may run on the event
    loop); ``flush`` writes the queue with one INSERT. The loop flushes after
    each model call, before and after running tools (a tool that reads the
    conversation's events sees every earlier one) and when the turn ends.
    Writing ten single-row INSERTs was about a sixth of a turn's database
    time in ``bench/turns.py``.

    Parallel tool calls and delegated tasks record (and flush) from several
    threads at once: numbering and queueing happen under a lock, so no
    number repeats and no event is left out of a flush that raced with it.
    """

    def __init__(self, conversation: Conversation, turn: int) -> None:
        self.conversation = conversation
        self.turn = turn
        self._sequence = 0
        self._pending: list[tuple[ConversationEvent, bytes | None]] = []
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Events recorded and not yet written."""
        return len(self._pending)

    def record(self, event_type: str, data: dict, blob: bytes | None = None) -> None:
        data, blob = event_row(data, blob)
        row = ConversationEvent(conversation=self.conversation, turn=self.turn, event_type=event_type, data=data)
        with self._lock:
            self._sequence += 1
            row.sequence = self._sequence
            self._pending.append((row, blob))

    def flush(self) -> None:
        """Write the queued events (and their blobs), in order. Cheap when nothing is queued."""
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        # Inside a caller's transaction (closing a turn) this joins it: no savepoint.
        with transaction.atomic(savepoint=False):
            for row, blob in pending:
                if blob is not None:
                    row.blob = ConversationEventBlob.objects.create(data=blob, size_bytes=len(blob))
            insert_events([row for row, _ in pending])


def insert_events(rows: list[ConversationEvent]) -> None:
    """INSERT ``rows`` in one statement, executed once per row by the driver.

    What ``bulk_create`` writes, without its per-call work: the statement is
    composed once per database backend, and each value is prepared by its
    field as the ORM would (``pre_save`` fills ``created_at``). ``bulk_create``
    spent about 250 µs of CPU per flush, five flushes a turn, under the GIL
    the event loop needs while other answers stream. The rows get no primary
    keys back: nothing reads them after the write.
    """
    connection = connections[router.db_for_write(ConversationEvent)]
    sql, fields = _event_insert(connection)
    values = [
        [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)


_EVENT_INSERTS: dict[str, tuple[str, tuple[Field, ...]]] = {}


def _event_insert(connection: Any) -> tuple[str, tuple[Field, ...]]:
    """The INSERT statement for events on ``connection``'s kind of database, and
    the fields it writes (composed on first use, then kept)."""
    statement = _EVENT_INSERTS.get(connection.vendor)
    if statement is None:
        quote = connection.ops.quote_name
        fields = tuple(f for f in ConversationEvent._meta.concrete_fields if not f.primary_key)
        columns = ", ".join(quote(f.column) for f in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        table = quote(ConversationEvent._meta.db_table)
        statement = _EVENT_INSERTS[connection.vendor] = (
            f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", fields
        )
    return statement


def event_row(data: dict, blob: bytes | None) -> tuple[dict, bytes | None]:
    """What is stored for an event: JSON-safe data, and a blob when it is too large inline."""
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str).encode()
    if blob is None and len(payload) > INLINE_LIMIT:
        return {"blob": True, "size_bytes": len(payload)}, payload
    return json.loads(payload), blob


def persist_message(effect: PersistAssistantMessage) -> None:
    ChatMessage.objects.create(
        conversation_id=effect.conversation_id,
        message_id=effect.message_id,
        tenant_id=effect.tenant_id,
        role=ChatMessage.Role.ASSISTANT,
        text=effect.final_text,
        structured_content=effect.structured_content,
        cards=effect.cards,
        cost_usd=effect.cost_usd,
    )


class ListDisplay:
    """A display that keeps what it was sent (the websocket display lands with the loop)."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []

    def send(self, chunk: dict) -> None:
        self.chunks.append(chunk)

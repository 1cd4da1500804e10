"""The real services effects are applied to: the event table and the message table."""

from __future__ import annotations

import json
import threading
from typing import Any

from django.db import transaction

from conversations.effects import PersistAssistantMessage
from conversations.inserts import insert_rows
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
            insert_rows([row for row, _ in pending])


def event_row(data: dict, blob: bytes | None) -> tuple[dict, bytes | None]:
    """What is stored for an event: JSON-safe data, and a blob when it is too large inline."""
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str).encode()
    if blob is None and len(payload) > INLINE_LIMIT:
        return {"blob": True, "size_bytes": len(payload)}, payload
    return json.loads(payload), blob


def persist_message(effect: PersistAssistantMessage) -> None:
    insert_rows(
        [
            ChatMessage(
                conversation_id=effect.conversation_id,
                message_id=effect.message_id,
                tenant_id=effect.tenant_id,
                role=ChatMessage.Role.ASSISTANT,
                text=effect.final_text,
                structured_content=effect.structured_content,
                cards=effect.cards,
                cost_usd=effect.cost_usd,
            )
        ]
    )


class ListDisplay:
    """A display that keeps what it was sent (the websocket display lands with the loop)."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []

    def send(self, chunk: dict) -> None:
        self.chunks.append(chunk)

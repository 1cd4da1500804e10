"""The real services effects are applied to: the event table and the message table."""

from __future__ import annotations

import json
from typing import Any

from conversations.effects import PersistAssistantMessage
from conversations.models import ChatMessage, Conversation, ConversationEvent, ConversationEventBlob

INLINE_LIMIT = 32 * 1024  # bytes of JSON kept inline; larger payloads go to a blob


class EventRecorder:
    """Writes one ConversationEvent per record, numbered in order within the turn."""

    def __init__(self, conversation: Conversation, turn: int) -> None:
        self.conversation = conversation
        self.turn = turn
        self._sequence = 0

    def record(self, event_type: str, data: dict, blob: bytes | None = None) -> None:
        data, blob = event_row(data, blob)
        stored_blob = None
        if blob is not None:
            stored_blob = ConversationEventBlob.objects.create(data=blob, size_bytes=len(blob))
        self._sequence += 1
        ConversationEvent.objects.create(
            conversation=self.conversation,
            turn=self.turn,
            sequence=self._sequence,
            event_type=event_type,
            data=data,
            blob=stored_blob,
        )


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

"""Rebuild a conversation's messages and events from its recorded effects.

Each closed turn's effects (finished or interrupted) are applied again, to
in-memory stand-ins for the event table and the message table, and the rebuilt
rows are compared with the persisted ones in one canonical serialisation, byte
for byte. A turn still running has no record yet: its rows are left out of
both sides and counted in ``running``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from conversations.effects import EffectContext, PersistAssistantMessage, apply_effect, effect_from_dict
from conversations.models import ChatMessage, Conversation, ConversationEvent, TurnRecord
from conversations.recording import ListDisplay, event_row


@dataclass
class ReplayReport:
    turns: int
    events: int
    messages: int
    identical: bool
    first_difference: str = ""
    interrupted: int = 0  # of ``turns``, how many were closed as interrupted
    running: int = 0  # turns still running, not compared


class _MemoryRecorder:
    def __init__(self, turn: int, rows: list) -> None:
        self.turn, self.rows, self._sequence = turn, rows, 0

    def record(self, event_type: str, data: dict, blob: bytes | None = None) -> None:
        data, blob = event_row(data, blob)
        self._sequence += 1
        self.rows.append(_event(self.turn, self._sequence, event_type, data, blob))


def _event(turn: int, sequence: int, event_type: str, data: dict, blob: bytes | None) -> dict:
    return {
        "turn": turn,
        "sequence": sequence,
        "event_type": event_type,
        "data": data,
        "blob": blob.hex() if blob is not None else None,
    }


def _message(m: PersistAssistantMessage | ChatMessage) -> dict:
    if isinstance(m, ChatMessage):
        return {
            "message_id": m.message_id,
            "text": m.text,
            "structured_content": m.structured_content,
            "cards": m.cards,
            "cost_usd": m.cost_usd,
        }
    return {
        "message_id": m.message_id,
        "text": m.final_text,
        "structured_content": m.structured_content,
        "cards": m.cards,
        "cost_usd": m.cost_usd,
    }


def canonical(rows: list[dict]) -> bytes:
    return json.dumps(rows, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def rebuild(conversation: Conversation) -> tuple[list[dict], list[dict], list[TurnRecord]]:
    """Events and assistant messages as the closed turns' recorded effects produce them."""
    events: list[dict] = []
    messages: list[dict] = []
    records = list(conversation.turns.exclude(status=TurnRecord.Status.RUNNING).order_by("turn"))
    for record in records:
        ctx = EffectContext(
            recorder=_MemoryRecorder(record.turn, events),
            display=ListDisplay(),
            persister=lambda m: messages.append(_message(m)),
        )
        for data in record.effects:
            apply_effect(effect_from_dict(data), ctx)
    return events, messages, records


def persisted(conversation: Conversation, running: Sequence[int] = ()) -> tuple[list[dict], list[dict]]:
    """The stored events and assistant messages, less the events of the ``running`` turns."""
    events = [
        _event(e.turn, e.sequence, e.event_type, e.data, bytes(e.blob.data) if e.blob else None)
        for e in ConversationEvent.objects.filter(conversation=conversation)
        .exclude(turn__in=running)
        .select_related("blob")
    ]
    messages = [
        _message(m) for m in ChatMessage.objects.filter(conversation=conversation, role=ChatMessage.Role.ASSISTANT)
    ]
    return events, messages


def replay(conversation: Conversation) -> ReplayReport:
    rebuilt_events, rebuilt_messages, records = rebuild(conversation)
    running = list(conversation.turns.filter(status=TurnRecord.Status.RUNNING).values_list("turn", flat=True))
    live_events, live_messages = persisted(conversation, running)
    difference = ""
    for label, rebuilt, live in (("event", rebuilt_events, live_events), ("message", rebuilt_messages, live_messages)):
        if canonical(rebuilt) != canonical(live):
            difference = _first_difference(label, rebuilt, live)
            break
    interrupted = sum(r.status == TurnRecord.Status.INTERRUPTED for r in records)
    return ReplayReport(
        len(records),
        len(rebuilt_events),
        len(rebuilt_messages),
        not difference,
        difference,
        interrupted=interrupted,
        running=len(running),
    )


def _first_difference(label: str, rebuilt: list[dict], live: list[dict]) -> str:
    for n, (a, b) in enumerate(zip(rebuilt, live, strict=False)):
        if canonical([a]) != canonical([b]):
            return f"{label} {n}: replayed {canonical([a]).decode()[:200]} but stored {canonical([b]).decode()[:200]}"
    return f"{label} count: replayed {len(rebuilt)}, stored {len(live)}"

"""A turn's bookends: start it (user message), finish it (assistant message, record)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Max

from conversations.citations import attach_citations
from conversations.effects import PersistAssistantMessage, effect_to_dict
from conversations.inserts import insert_rows
from conversations.models import ChatMessage, Conversation, TurnRecord
from conversations.runtime import Runtime, start_run
from conversations.side_effects import merge_cards


def begin_turn(
    conversation: Conversation,
    *,
    user: Any = None,
    user_message: str,
    display: Any = None,
    mode: str | None = None,
    interactive: bool = False,
) -> Runtime:
    """Open the next turn of ``conversation``; the user's message is its first event."""
    turn = (conversation.turns.aggregate(n=Max("turn"))["n"] or 0) + 1
    insert_rows([ChatMessage(
        conversation=conversation, message_id=uuid.uuid4().hex, tenant_id=conversation.tenant_id,
        role=ChatMessage.Role.USER, text=user_message,
    )])
    runtime = start_run(
        conversation, user=user, turn=turn, display=display, mode=mode, user_message=user_message,
        interactive=interactive,
    )
    runtime.recorder.record("user_message", {"text": user_message, "turn": turn})
    return runtime


@transaction.atomic
def finish_turn(runtime: Runtime, final_text: str, structured_content: list | None = None) -> PersistAssistantMessage:
    """Persist the assistant's answer (as an effect), close the turn and store its record.

    One transaction: the answer, the last events and the record are stored
    together or not at all, with one commit instead of three.
    """
    message = PersistAssistantMessage(
        message_id=uuid.uuid4().hex,
        conversation_id=runtime.conversation.pk,
        tenant_id=runtime.tenant_id,
        final_text=final_text,
        structured_content=list(structured_content or []),
        cards=merge_cards(attach_citations(final_text, runtime.cards)),
        cost_usd=round(runtime.cost.total, 6),
    )
    runtime.log.emit(message)
    runtime.recorder.record("done", {"turn": runtime.turn, "cost_usd": message.cost_usd})
    runtime.flush_events()
    insert_rows([TurnRecord(
        conversation=runtime.conversation,
        turn=runtime.turn,
        effects=[effect_to_dict(effect) for effect in runtime.log.close()],
    )])
    return message

"""A turn's bookends: start it (user message), finish it (assistant message, record)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Max

from conversations.citations import attach_citations
from conversations.effects import PersistAssistantMessage, effect_to_dict
from conversations.inserts import insert_rows
from conversations.models import ChatMessage, Conversation, TurnRecord
from conversations.runtime import Runtime, start_run
from conversations.side_effects import merge_cards
from registry.snapshot import Definition, redact_command, redacted


def begin_turn(
    conversation: Conversation,
    *,
    user: Any = None,
    user_message: str,
    display: Any = None,
    mode: str | None = None,
    interactive: bool = False,
) -> Runtime:
    """Open the next turn of ``conversation``; the user's message is its first event.

    What is stored of the message has a slash command's secret inputs redacted
    (``redact_command``); the turn itself (the model, the tool) gets the text as typed.
    """
    turn = (conversation.turns.aggregate(n=Max("turn"))["n"] or 0) + 1
    runtime = start_run(
        conversation, user=user, turn=turn, display=display, mode=mode, user_message=user_message,
        interactive=interactive,
    )
    kept = redact_command(user_message, runtime.registry.definitions)
    insert_rows([ChatMessage(
        conversation=conversation, message_id=uuid.uuid4().hex, tenant_id=conversation.tenant_id,
        role=ChatMessage.Role.USER, text=kept,
    )])
    runtime.recorder.record("user_message", {"text": kept, "turn": turn})
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
        structured_content=_without_secrets(structured_content or [], runtime.registry.definitions),
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


def _without_secrets(messages: list[dict], definitions: Callable[[], dict[str, Definition]]) -> list[dict]:
    """The turn's messages as they are stored: each tool call's secret inputs redacted, as in
    its ``tool_call`` event (the in-memory messages the model saw are left alone).
    ``definitions`` (the registry's) is called only when a message holds a tool call."""
    calls = [b for m in messages if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == "tool_use"]
    if not calls:
        return list(messages)
    known = definitions()

    def block(b: dict) -> dict:
        if b.get("type") != "tool_use":
            return b
        kept = redacted(b.get("input") or {}, known.get(b.get("name", "")))
        return b if kept is b.get("input") else {**b, "input": kept}

    return [
        {**m, "content": [block(b) for b in m["content"]]} if isinstance(m.get("content"), list) else m
        for m in messages
    ]

"""A turn's bookends: reserve and start it (user message), finish or interrupt it (answer, record)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction

from conversations.citations import attach_citations
from conversations.effects import PersistAssistantMessage, effect_to_dict
from conversations.inserts import insert_rows
from conversations.listing import mark_active
from conversations.models import ChatMessage, Conversation, TurnRecord
from conversations.runtime import Runtime, start_run
from conversations.side_effects import merge_cards
from conversations.turn_reservations import refused_reservation, released, reserve_turn
from registry.snapshot import Definition, redact_command, redacted

logger = logging.getLogger("eunice.conversations")


def begin_turn(
    conversation: Conversation,
    *,
    user: Any = None,
    user_message: str,
    display: Any = None,
    mode: str | None = None,
    interactive: bool = False,
) -> Runtime:
    """Reserve and open the next turn of ``conversation``; the user's message is its first event.

    Raises ``TurnInProgress`` when a turn of the conversation is running (in
    any process). One transaction: the reservation, the message and its event
    are stored together, so a refused message leaves nothing behind.

    What is stored of the message has a slash command's secret inputs redacted
    (``redact_command``); the turn itself (the model, the tool) gets the text as typed.
    """
    turn = None
    try:
        with transaction.atomic():
            turn = reserve_turn(conversation)
            runtime = start_run(
                conversation,
                user=user,
                turn=turn,
                display=display,
                mode=mode,
                user_message=user_message,
                interactive=interactive,
            )
            kept = redact_command(user_message, runtime.registry.definitions)
            runtime.user_message_id = uuid.uuid4().hex
            insert_rows(
                [
                    ChatMessage(
                        conversation=conversation,
                        message_id=runtime.user_message_id,
                        tenant_id=conversation.tenant_id,
                        role=ChatMessage.Role.USER,
                        text=kept,
                    )
                ]
            )
            mark_active(conversation, kept)
            runtime.recorder.record("user_message", {"text": kept, "turn": turn})
            runtime.flush_events()  # a turn killed during its first model call still shows its question
    except BaseException as exc:
        if turn is not None:  # rolled back: the reservation is gone
            released(conversation.pk, turn)
        if isinstance(exc, IntegrityError):  # another process reserved a turn between our read and our write
            raise refused_reservation(conversation, exc) from None
        raise
    return runtime


def finish_turn(runtime: Runtime, final_text: str, structured_content: list | None = None) -> PersistAssistantMessage:
    """Persist the assistant's answer (as an effect), close the turn and store its record.

    One transaction: the answer, the last events and the record are stored
    together or not at all, with one commit instead of three. The turn is this
    process's to run until that commit (then ``released``).
    """
    with transaction.atomic():
        message = _finish(runtime, final_text, structured_content)
    released(runtime.conversation.pk, runtime.turn)
    return message


def _finish(runtime: Runtime, final_text: str, structured_content: list | None) -> PersistAssistantMessage:
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
    _close(runtime, TurnRecord.Status.FINISHED)
    return message


def interrupt_turn(runtime: Runtime, reason: str, structured_content: list | None = None) -> None:
    """Close a turn that cannot finish (it raised, or its task was cancelled) as interrupted.

    What it did is kept: its recorded events, the text it streamed (stored as a
    partial answer, without any note of ours in the model's words), the messages
    it added (``structured_content``: its tool calls with their results, which the
    next turn's history holds), and an ``interrupted`` event saying why. Never
    raises: if the database cannot take it now, the turn is released and the next
    message closes it from its events.
    """
    try:
        with transaction.atomic():
            partial = runtime.log.streamed_text()
            if partial.strip() or structured_content:
                runtime.log.emit(
                    PersistAssistantMessage(
                        message_id=uuid.uuid4().hex,
                        conversation_id=runtime.conversation.pk,
                        tenant_id=runtime.tenant_id,
                        final_text=partial,
                        structured_content=_without_secrets(structured_content or [], runtime.registry.definitions),
                        cost_usd=round(runtime.cost.total, 6),
                    )
                )
            runtime.recorder.record("interrupted", {"turn": runtime.turn, "reason": reason[:300]})
            runtime.flush_events()
            _close(runtime, TurnRecord.Status.INTERRUPTED, reason)
    except Exception:
        logger.exception("could not close turn %s of %s as interrupted", runtime.turn, runtime.conversation.pk)
    finally:
        released(runtime.conversation.pk, runtime.turn)


def _close(runtime: Runtime, status: str, reason: str = "") -> None:
    TurnRecord.objects.filter(conversation=runtime.conversation, turn=runtime.turn).update(
        status=status,
        interrupted_reason=reason[:300],
        effects=[effect_to_dict(effect) for effect in runtime.log.close()],
    )


def _without_secrets(messages: list[dict], definitions: Callable[[], dict[str, Definition]]) -> list[dict]:
    """The turn's messages as they are stored: each tool call's secret inputs redacted, as in
    its ``tool_call`` event (the in-memory messages the model saw are left alone).
    ``definitions`` (the registry's) is called only when a message holds a tool call."""
    calls = [
        b for m in messages if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == "tool_use"
    ]
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

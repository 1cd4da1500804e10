"""A conversation's earlier turns as Messages API messages."""

from __future__ import annotations

from conversations.models import ChatMessage, Conversation
from conversations.result_budget import compacted_history
from eunice.db.prepared import Prepared

_ROWS: Prepared[ChatMessage] = Prepared(
    lambda conversation_id, leaving_out: (
        ChatMessage.objects.filter(conversation_id=conversation_id)
        .exclude(message_id=leaving_out)
        .order_by("created_at", "id")
    )
)


def load_history(conversation: Conversation, *, leaving_out: str = "") -> list[dict]:
    """User messages as text; each assistant turn as the messages it added (tool calls included).
    ``leaving_out`` is the ``message_id`` of a message not to include (the new turn's own).
    One query, composed once (every turn reads it)."""
    messages: list[dict] = []
    for message in _ROWS(conversation.pk, leaving_out):
        if message.role == ChatMessage.Role.USER:
            messages.append({"role": "user", "content": [{"type": "text", "text": message.text}]})
        elif message.structured_content:
            messages.extend(message.structured_content)
        elif message.text:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": message.text}]})
    return sendable(compacted_history(messages))


def sendable(messages: list[dict]) -> list[dict]:
    """``messages`` as the Messages API accepts them: without messages that say nothing,
    and with roles alternating.

    A model can end its turn with no content at all (an empty ``end_turn``); the API
    refuses any later request that carries that empty message, so it is skipped (it
    said nothing the model needs to read back). Skipping it, or a cancelled turn, can
    leave two messages of one role in a row: they are merged into one.
    """
    merged: list[dict] = []
    for message in messages:
        if not message.get("content"):
            continue
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {**merged[-1], "content": [*merged[-1]["content"], *message["content"]]}
        else:
            merged.append(message)
    return merged

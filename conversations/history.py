"""A conversation's earlier turns as Messages API messages."""

from __future__ import annotations

from conversations.models import ChatMessage, Conversation


def load_history(conversation: Conversation) -> list[dict]:
    """User messages as text; each assistant turn as the messages it added (tool calls included)."""
    messages: list[dict] = []
    for message in ChatMessage.objects.filter(conversation=conversation).order_by("created_at", "id"):
        if message.role == ChatMessage.Role.USER:
            messages.append({"role": "user", "content": [{"type": "text", "text": message.text}]})
        elif message.structured_content:
            messages.extend(message.structured_content)
        elif message.text:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": message.text}]})
    return _merge_adjacent(messages)


def _merge_adjacent(messages: list[dict]) -> list[dict]:
    """The API wants roles to alternate; a cancelled turn can leave two user messages in a row."""
    merged: list[dict] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {**merged[-1], "content": [*merged[-1]["content"], *message["content"]]}
        else:
            merged.append(message)
    return merged

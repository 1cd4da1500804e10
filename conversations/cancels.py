"""Cancels from REST: of a conversation's running turn, or of one of its tool calls.

The websocket consumer does the same for its sockets (conversations.consumers);
here the cancel takes effect in this process at once and reaches a run in
another server process through the channel layer, as a socket's cancel does.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from conversations.display import group_name
from conversations.models import Conversation
from conversations.state import cancel_tool_call, request_cancel

logger = logging.getLogger("eunice.conversations")


def cancel(conversation: Conversation, tool_use_id: str | None = None) -> bool:
    """Cancel the running turn, or only the tool call ``tool_use_id``; whether that call ran
    in this process (always True for a turn). The caller checks ownership first."""
    if tool_use_id is None:
        request_cancel(conversation)
        _tell_others(conversation.pk, {"type": "run.cancel"})
        return True
    if cancel_tool_call(conversation.pk, tool_use_id):
        return True
    _tell_others(conversation.pk, {"type": "run.cancel_tool", "tool_use_id": tool_use_id})
    return False


def _tell_others(conversation_id: str, message: dict) -> None:
    try:
        async_to_sync(get_channel_layer().group_send)(group_name(conversation_id), message)
    except Exception as exc:  # noqa: BLE001 (Redis down: only this process's runs are cancelled)
        logger.warning("channel layer unreachable relaying a cancel (%s)", type(exc).__name__)

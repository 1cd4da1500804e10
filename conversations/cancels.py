"""Cancels of a conversation's running turn, or of one of its tool calls, in every process.

The REST view and the websocket consumer both come here. The cancel takes effect
in this process at once; the turn may be running in another server process,
so it is also published on the process bus (eunice/bus.py), and every process
cancels what it runs of that conversation. A process that misses the message
(Redis down) still stops the turn at its next step: ``request_cancel`` raised
the conversation's flag in the database, which the loop reads between steps.
A process that is gone (killed, on any host) reads neither: a cancel closes its
turn as interrupted, and the conversation's pages are told (``close_if_gone``); so
does a sweep every minute, cancel or not (``sweep_dead_turns``).
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from conversations.display import tell_pages
from conversations.models import Conversation
from conversations.state import cancel_running, cancel_tool_call, request_cancel
from conversations.timeline import INTERRUPTED
from conversations.turn_reservations import close_dead_turns, close_if_dead
from eunice import bus

CANCEL_TURN = "conversations.cancel_turn"
CANCEL_CALL = "conversations.cancel_call"


def cancel(conversation: Conversation, tool_use_id: str | None = None) -> bool:
    """Cancel the running turn, or only the tool call ``tool_use_id``; whether that call ran
    in this process (always True for a turn). The caller checks ownership first."""
    if tool_use_id is None:
        request_cancel(conversation)
        tell_others(conversation.pk)
        close_if_gone(conversation.pk)
        return True
    if cancel_tool_call(conversation.pk, tool_use_id):
        return True
    tell_others(conversation.pk, tool_use_id)
    return False


def close_if_gone(conversation_id: str) -> bool:
    """Close the conversation's running turn if its process is gone (it reads no cancel
    flag), and tell the conversation's pages, in every process, that it ended; whether
    it did."""
    if not close_if_dead(conversation_id):
        return False
    _tell_ended(conversation_id)
    return True


def sweep_dead_turns() -> int:
    """Close every turn whose process is gone and tell each one's pages that it ended; how
    many. A django-q2 schedule runs it every minute (``registry.schedules``): a page left
    open on a turn whose server died on another host is not otherwise told, and shows the
    turn running, with Send disabled, until someone cancels or reloads."""
    closed = close_dead_turns()
    for conversation_id in closed:
        _tell_ended(conversation_id)
    return len(closed)


def _tell_ended(conversation_id: str) -> None:
    ended = {"type": "done", "stop_reason": "interrupted", "notice": INTERRUPTED}
    async_to_sync(tell_pages)(conversation_id, get_channel_layer(), ended)


def tell_others(conversation_id: str, tool_use_id: str | None = None) -> None:
    """Publish the cancel to the other server processes (this one has acted on it already)."""
    if tool_use_id is None:
        bus.publish(CANCEL_TURN, here=False, conversation=str(conversation_id))
    else:
        bus.publish(CANCEL_CALL, here=False, conversation=str(conversation_id), tool_use_id=tool_use_id)


@bus.on(CANCEL_TURN)
def _cancel_turn_here(payload: dict) -> None:
    cancel_running(str(payload["conversation"]))


@bus.on(CANCEL_CALL)
def _cancel_call_here(payload: dict) -> None:
    cancel_tool_call(str(payload["conversation"]), str(payload["tool_use_id"]))

"""The websocket a browser chats over: /ws/conversations/<id>/.

Thin by design: it authenticates, checks ownership on connect and on every
message, and starts turns, cancels and approval decisions in the services.
Chunks of a running turn reach the sockets in its own process directly and
those in other processes through the channel layer (conversations.display).
"""

from __future__ import annotations

import asyncio
import functools
import logging

import orjson
from asgiref.sync import sync_to_async
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch
from django.conf import settings
from django.core.exceptions import PermissionDenied

from conversations import approvals, cancels, questions, runs
from conversations.access import owned_conversation
from conversations.display import PROCESS, ChannelDisplay, encode, group_name, watchers
from conversations.loop import run_turn
from conversations.state import cancel_running, cancel_tool_call
from conversations.turn_reservations import TurnInProgress
from eunice import drain
from eunice.health import unavailable_message
from eunice.jsonlimits import loads_bounded
from eunice.throttling import turn_refused_message, turn_retry_after
from registry.aio import in_db_thread, reconnecting
from registry.approvals import ApprovalConflict, ApprovalNotFound

logger = logging.getLogger("eunice.conversations")

# A socket whose channel-layer read failed (Redis down) retries after this
# many seconds, doubling up to the cap, instead of crashing its consumer.
LAYER_RETRY_SECONDS, LAYER_RETRY_CAP = 0.5, 5.0
# "Try again later": the close code of a socket refused while Redis is down.
CLOSE_UNAVAILABLE = 1013


class ConversationConsumer(AsyncJsonWebsocketConsumer):
    async def __call__(self, scope, receive, send) -> None:
        """Channels' ``AsyncConsumer.__call__``, with a channel-layer read that survives an outage.

        Channels lets a failed ``channel_layer.receive`` (Redis down) escape the
        consumer, which the server answers with an unexplained HTTP 500 or a
        dropped socket; here the read is retried with backoff (``_layer_receive``).
        """
        self.scope = scope
        self.channel_layer = get_channel_layer(self.channel_layer_alias)
        self.channel_name = await self.channel_layer.new_channel()
        self.channel_receive = functools.partial(self._layer_receive, self.channel_layer, self.channel_name)
        self.base_send = send
        try:
            await await_many_dispatch([receive, self.channel_receive], self.dispatch)
        except StopConsumer:
            pass

    @staticmethod
    async def _layer_receive(layer, channel: str) -> dict:
        delay = LAYER_RETRY_SECONDS
        while True:
            try:
                return await layer.receive(channel)
            except Exception as exc:  # noqa: BLE001 (Redis down: retried, the socket stays up)
                logger.warning("channel layer unreachable (%s); retrying in %.1f s", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, LAYER_RETRY_CAP)

    async def dispatch(self, message: dict) -> None:
        """Channels' dispatch, without its per-message ``close_old_connections``.

        That call is a hop to the one thread-sensitive executor thread for every
        message, so every chunk of every conversation queued behind it: the
        largest cost of relaying. Our handlers never use the database on the
        event loop; their database work goes through ``in_db_thread`` (or
        ``database_sync_to_async`` with ``reconnecting``), which closes stale
        connections itself and replaces one the database ended.
        """
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']!r}")
        await handler(message)

    @classmethod
    async def encode_json(cls, content: dict) -> str:
        """What ``send_json`` writes: the display's encoder, so chunks relayed from
        another process cost what this process's own chunks cost."""
        return encode(content)

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        if not getattr(self.user, "is_authenticated", False):
            await self.close(code=4401)
            return
        if await in_db_thread(owned_conversation)(self.user, self.conversation_id) is None:
            await self.close(code=4404)
            return
        group = group_name(self.conversation_id)
        try:
            await self.channel_layer.group_add(group, self.channel_name)
        except Exception as exc:  # noqa: BLE001 (Redis down: said to the page, not a 500)
            logger.warning("websocket refused: channel layer unreachable (%s)", type(exc).__name__)
            await self.accept()
            await self.send_json(
                {
                    "type": "error",
                    "code": "unavailable",
                    "down": ["channel_layer"],
                    "message": unavailable_message(["channel_layer"]),
                }
            )
            await self.close(code=CLOSE_UNAVAILABLE)
            return
        self.group = group
        await self.accept()
        watchers.add_local(self.conversation_id, self)
        await self._tell_group(self._watcher("watcher.joined"))

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            watchers.discard_local(self.conversation_id, self)
            await self._tell_group(self._watcher("watcher.left"))
            try:
                await self.channel_layer.group_discard(self.group, self.channel_name)
            except Exception as exc:  # noqa: BLE001 (the group's members expire by themselves)
                logger.warning("channel layer unreachable leaving a group (%s)", type(exc).__name__)

    async def _tell_group(self, message: dict) -> None:
        """Tell the conversation's sockets in other processes; lost while the channel layer is down."""
        try:
            await self.channel_layer.group_send(self.group, message)
        except Exception as exc:  # noqa: BLE001
            logger.warning("channel layer unreachable sending %s (%s)", message["type"], type(exc).__name__)

    def _watcher(self, kind: str) -> dict:
        return {"type": kind, "channel": self.channel_name, "process": PROCESS}

    async def send_chunk_text(self, text: str) -> None:
        """A chunk of a turn running in this process, already encoded (straight to the server's send)."""
        await self.base_send({"type": "websocket.send", "text": text})

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        """A frame: JSON text within the size and depth limits, else an error frame (the socket stays open)."""
        if text_data is None:
            await self.send_json({"type": "error", "message": "send JSON as text frames"})
            return
        # A message's text may be escaped (up to 6 characters each, \uXXXX) plus the frame's own keys.
        limit = 6 * settings.EUNICE_MAX_MESSAGE_CHARS + 1024
        try:
            content = loads_bounded(text_data, max_bytes=limit, what="the frame")
        except ValueError as exc:  # invalid JSON, too deep (JSONTooDeep) or too long (JSONTooLarge)
            await self.send_json({"type": "error", "message": f"unreadable frame: {exc}"})
            return
        if not isinstance(content, dict):
            await self.send_json(
                {
                    "type": "error",
                    "message": (
                        f"unreadable frame: expected a JSON object with a 'type', got a JSON {_json_kind(content)}"
                    ),
                }
            )
            return
        await self.receive_json(content)

    async def receive_json(self, content: dict, **kwargs) -> None:
        # On a database thread with the reconnect of every turn step (registry.aio.reconnecting):
        # a connection the database ended (a failover) is replaced, not the socket's end.
        conversation = await in_db_thread(owned_conversation)(self.user, self.conversation_id)
        if conversation is None:  # membership or ownership changed since connect
            await self.send_json({"type": "error", "message": "you no longer have access to this conversation"})
            await self.close(code=4403)
            return
        kind = content.get("type")
        if kind == "message":
            await self._start(conversation, content.get("text"))
        elif kind == "answer":
            await self._answer(content)
        elif kind == "elicitation":
            await self._answer_elicitation(content)
        elif kind == "cancel":
            await self._cancel(conversation, content.get("tool_use_id"))
        elif kind == "approval":
            await self._decide(conversation, content)
        else:
            await self.send_json(
                {
                    "type": "error",
                    "message": (
                        f"unknown message type {kind!r}; expected 'message', 'answer', 'elicitation', "
                        "'cancel' or 'approval'"
                    ),
                }
            )

    async def _cancel(self, conversation, tool_use_id) -> None:
        """Cancel the running turn, or (``tool_use_id``) only that tool call; answered at once
        with ``cancel_requested``. The call's result (``Cancelled``) follows as its tool_result."""
        if tool_use_id is not None and not isinstance(tool_use_id, str):
            await self.send_json({"type": "error", "message": "'tool_use_id' must be a string"})
            return
        here = True
        if tool_use_id is None:
            cancel_running(conversation.pk)
        else:
            here = cancel_tool_call(conversation.pk, tool_use_id)
        # Answered before any database work: this process's run has stopped already.
        await self.send_json({"type": "cancel_requested", "tool_use_id": tool_use_id})
        if tool_use_id is None:  # the flag and the other processes; a dead turn is closed
            await in_db_thread(cancels.cancel)(conversation)
        elif not here:  # perhaps running in another process
            await in_db_thread(cancels.tell_others)(conversation.pk, tool_use_id)

    async def _decide(self, conversation, content: dict) -> None:
        """The person's click on an approval card: decided as the conversation's owner.

        Off the thread-sensitive executor: an approved call may run for a minute. A
        decision on a call that paused its turn resumes the turn here.
        """
        approval_id, decision = content.get("approval_id"), content.get("decision")
        expected, reason = content.get("args_hash"), content.get("reason") or ""
        if not all(isinstance(v, str) for v in (approval_id, decision, expected or "", reason)):
            await self.send_json(
                {"type": "error", "message": "an approval needs 'approval_id', 'decision' and 'args_hash' as strings"}
            )
            return
        try:
            card = await database_sync_to_async(reconnecting(approvals.decide), thread_sensitive=False)(
                approval_id,
                decision,
                acting_user=conversation.user,
                expected_hash=expected,
                reason=reason,
                conversation_id=conversation.pk,
                arguments=content.get("arguments"),
            )
        except (ValueError, ApprovalNotFound, PermissionDenied, ApprovalConflict) as exc:
            await self.send_json({"type": "error", "message": f"the decision was not taken: {exc}"})
            return
        resume = card.get("resume")
        if resume is not None:
            await self._resume(conversation, str(approval_id), resume)

    async def _resume(self, conversation, approval_id: str, resume: dict) -> None:
        """The turn a decision resumes; when one cannot start now, the decision is a turn
        of its own, which the model reads on the next one."""
        if drain.draining() or not runs.try_start(self.user.pk):
            await database_sync_to_async(approvals.report_by_id)(approval_id, conversation.user)
            return
        asyncio.ensure_future(self._run(conversation, resume["text"], events=resume["events"], approval_id=approval_id))

    async def _refuse(self, message: str, **detail) -> None:
        """Tells this socket its message was not taken and nothing was stored (the page gives the text back)."""
        await self.send_json({"type": "error", "refused": True, "message": message, **detail})

    async def _start(self, conversation, text) -> None:
        if not isinstance(text, str) or not text.strip():
            await self._refuse("a message needs non-empty 'text'")
            return
        if len(text) > settings.EUNICE_MAX_MESSAGE_CHARS:
            limit = settings.EUNICE_MAX_MESSAGE_CHARS
            await self._refuse(f"the message has {len(text):,} characters; the limit is {limit:,}")
            return
        # The REST API's turn rate, on the same counter (eunice/throttling.py).
        try:
            wait = await sync_to_async(turn_retry_after, thread_sensitive=False)(self.user.pk)
        except Exception as exc:  # noqa: BLE001 (the throttle's cache is Redis: down, say so)
            logger.warning("turn refused: cache unreachable (%s)", type(exc).__name__)
            await self._refuse(unavailable_message(["cache"]), code="unavailable", down=["cache"])
            return
        if wait is not None:
            await self._refuse(turn_refused_message(wait), retry_after=wait)
            return
        if drain.draining():
            await self._refuse(drain.REFUSED, code="server_stopping")
            return
        if not runs.try_start(self.user.pk):
            await self._refuse(runs.too_many_message())
            return
        asyncio.ensure_future(self._run(conversation, text))

    async def _run(self, conversation, text: str, *, events: tuple = (), approval_id: str = "") -> None:
        display = ChannelDisplay(self.conversation_id, self.channel_layer, asyncio.get_running_loop())
        pump = asyncio.ensure_future(display.pump())
        try:
            await drain.run_tracked(
                self.conversation_id,
                run_turn,
                conversation,
                text=text,
                user=conversation.user,
                display=display,
                interactive=True,
                events=events,
            )
        except TurnInProgress as busy:  # refused before anything was stored: only this socket is told
            if approval_id:  # a decision that could not resume now is kept as a turn of its own
                await database_sync_to_async(approvals.report_by_id)(approval_id, conversation.user)
            else:
                await self._refuse(str(busy), code="turn_in_progress", running_turn=busy.turn)
        except runs.RunCapReached as full:  # the user's answers in other server processes fill the cap
            if approval_id:
                await database_sync_to_async(approvals.report_by_id)(approval_id, conversation.user)
            else:
                await self._refuse(str(full))
        except Exception:  # the socket must learn the turn ended, whatever broke
            logger.exception("turn failed in conversation %s", self.conversation_id)
            display.send({"type": "error", "message": "the answer failed; the details are in the server log"})
            display.send({"type": "done", "stop_reason": "error", "cancelled": False})
        finally:
            runs.finish(self.user.pk)
            display.close()
            await pump

    async def _answer(self, content: dict) -> None:
        question_id, text = content.get("question_id"), content.get("text")
        if not isinstance(question_id, str) or not isinstance(text, str) or not text.strip():
            await self.send_json({"type": "error", "message": "an answer needs 'question_id' and non-empty 'text'"})
            return
        text = text[: settings.EUNICE_MAX_MESSAGE_CHARS]
        if not questions.answer(self.conversation_id, question_id, text):  # perhaps asked in another process
            await in_db_thread(questions.tell_others)(self.conversation_id, question_id, text)

    async def _answer_elicitation(self, content: dict) -> None:
        """The person's accept (with the form's fields), decline or cancel of an MCP server's
        request for input (registry/mcp/elicitation.py checks the fields against its schema)."""
        from registry.mcp.elicitation import ACTIONS

        question_id, action, fields = content.get("question_id"), content.get("action"), content.get("content")
        if not isinstance(question_id, str) or action not in ACTIONS or not isinstance(fields, dict | None):
            await self.send_json(
                {
                    "type": "error",
                    "message": "an elicitation answer needs 'question_id', 'action' (one of accept, decline, "
                    "cancel) and, to accept a form, 'content' as an object",
                }
            )
            return
        fields = {str(k)[:200]: v for k, v in (fields or {}).items() if isinstance(v, str | int | float | bool | list)}
        if len(orjson.dumps(fields)) > settings.EUNICE_MAX_MESSAGE_CHARS:
            await self.send_json({"type": "error", "message": "the form's content is too long"})
            return
        answer = {"action": action, "content": fields}
        if not questions.answer(self.conversation_id, question_id, answer):  # perhaps asked in another process
            await in_db_thread(questions.tell_others)(self.conversation_id, question_id, answer)

    async def conversation_chunk(self, event: dict) -> None:
        # A chunk of a turn running in another process.
        await self.send_json(event["chunk"])

    async def watcher_joined(self, event: dict) -> None:
        # A socket opened; one in another process is told we are here too.
        if event["process"] != PROCESS:
            watchers.add_remote(self.conversation_id, event["channel"])
            await self.channel_layer.send(event["channel"], self._watcher("watcher.present"))

    async def watcher_present(self, event: dict) -> None:
        if event["process"] != PROCESS:
            watchers.add_remote(self.conversation_id, event["channel"])

    async def watcher_left(self, event: dict) -> None:
        if event["process"] != PROCESS:
            watchers.discard_remote(self.conversation_id, event["channel"])


def _json_kind(value) -> str:  # noqa: ANN001
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")

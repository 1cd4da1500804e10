"""A display that streams a run's chunks to every socket watching the conversation.

Sockets in the process running the turn get each chunk directly: one JSON
encoding, one websocket write each, nothing through the channel layer. Going
through the layer cost a group send, a copy, a queue and a dispatch per chunk
per socket, which was most of the server's work when hundreds of answers
stream at once.

Sockets in other server processes (several workers sharing Redis) are known
from the conversation's group: a socket announces itself when it opens and
when it closes, the sockets already open answer with theirs, and a running
display sends each socket elsewhere the chunk on its own channel. With the
in-memory layer every socket is in this process and that list stays empty.
A turn learns of sockets elsewhere through this process's sockets of the
conversation; if the tab that started it has closed, a tab opened meanwhile
in another process sees the answer when it is stored, not as it streams.
"""

import asyncio
import json
import logging
import threading
import time
import uuid
from collections import defaultdict
from typing import Any, Protocol

import orjson

logger = logging.getLogger("eunice.conversations")

# Tells this process's sockets from other processes' in watcher announcements.
PROCESS = uuid.uuid4().hex


def group_name(conversation_id: str) -> str:
    return f"conversation.{conversation_id}"


class Socket(Protocol):
    channel_name: str

    async def send_chunk_text(self, text: str) -> None: ...


class Watchers:
    """Who watches each conversation, as seen from this process (event loop only):
    its own open sockets, and the channel names of sockets in other processes."""

    def __init__(self) -> None:
        self._local: dict[str, set[Socket]] = defaultdict(set)
        self._remote: dict[str, set[str]] = defaultdict(set)

    def add_local(self, conversation_id: str, socket: Socket) -> None:
        self._local[conversation_id].add(socket)

    def discard_local(self, conversation_id: str, socket: Socket) -> None:
        sockets = self._local.get(conversation_id)
        if sockets is not None:
            sockets.discard(socket)
            if not sockets:  # nobody here hears about that conversation any more
                del self._local[conversation_id]
                self._remote.pop(conversation_id, None)

    def add_remote(self, conversation_id: str, channel: str) -> None:
        if conversation_id in self._local:
            self._remote[conversation_id].add(channel)

    def discard_remote(self, conversation_id: str, channel: str) -> None:
        self._remote.get(conversation_id, set()).discard(channel)

    def local(self, conversation_id: str) -> tuple[Socket, ...]:
        return tuple(self._local.get(conversation_id, ()))

    def remote(self, conversation_id: str) -> tuple[str, ...]:
        return tuple(self._remote.get(conversation_id, ()))


watchers = Watchers()


class ChannelDisplay:
    """``send`` may be called from any thread; ``pump`` forwards chunks in order."""

    def __init__(self, conversation_id: str, channel_layer: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._conversation_id = conversation_id
        self._group = group_name(conversation_id)
        self._layer = channel_layer
        self._loop = loop
        self._queue: asyncio.Queue = asyncio.Queue()
        self._loop_thread = threading.get_ident()  # made on the loop's thread

    def send(self, chunk: dict) -> None:
        stamped = {**chunk, "ts": time.time() * 1000.0}  # emit time, ms: clients can measure relay latency
        if threading.get_ident() == self._loop_thread:  # the streaming answer: no wake-up needed
            self._queue.put_nowait(stamped)
        else:  # a tool's progress from a worker thread
            self._loop.call_soon_threadsafe(self._queue.put_nowait, stamped)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def pump(self) -> None:
        """Forward chunks until ``close``. When sockets fall behind, text and
        thinking deltas that queued up meanwhile go out merged, as one chunk
        stamped with the oldest emit time: fewer, larger messages instead of a
        growing backlog."""
        closed = False
        while not closed:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if batch[-1] is None:
                closed = True
                batch.pop()
            for chunk in coalesce(batch):
                await self._deliver(chunk)

    async def _deliver(self, chunk: dict) -> None:
        text = encode(chunk)
        for socket in watchers.local(self._conversation_id):
            try:
                await socket.send_chunk_text(text)
            except Exception:  # a socket closing as we write: the others still get it
                logger.debug("could not write to a closing socket of %s", self._conversation_id, exc_info=True)
        for channel in watchers.remote(self._conversation_id):
            try:
                await self._layer.send(channel, {"type": "conversation.chunk", "chunk": chunk})
            except Exception as exc:  # noqa: BLE001 (Redis down: other processes' sockets miss it, the turn goes on)
                logger.warning(
                    "channel layer unreachable relaying a chunk of %s (%s)", self._conversation_id, type(exc).__name__
                )


async def tell_pages(conversation_id: str, channel_layer: Any, chunk: dict) -> None:
    """One chunk to every socket of the conversation, in every server process (its group):
    for news that comes from no running turn, such as a dead turn closed. Lost while the
    channel layer is down; the pages then learn it when they next draw."""
    message = {"type": "conversation.chunk", "chunk": {**chunk, "ts": time.time() * 1000.0}}
    try:
        await channel_layer.group_send(group_name(conversation_id), message)
    except Exception as exc:  # noqa: BLE001 (Redis down: said in the log, the caller goes on)
        logger.warning("channel layer unreachable telling %s's pages (%s)", conversation_id, type(exc).__name__)


MERGEABLE = frozenset({"text_delta", "thinking", "subtask_text", "subtask_thinking"})


def coalesce(chunks: list[dict]) -> list[dict]:
    """Merge runs of consecutive same-type text chunks (of one delegated task, for a
    task's: two tasks' text never runs together); everything else passes unchanged."""
    merged: list[dict] = []
    for chunk in chunks:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and chunk["type"] in MERGEABLE
            and previous["type"] == chunk["type"]
            and previous.get("subtask") == chunk.get("subtask")
        ):
            merged[-1] = {**previous, "text": previous["text"] + chunk["text"]}
        else:
            merged.append(chunk)
    return merged


def encode(chunk: dict) -> str:
    """A chunk as JSON text for the sockets: orjson (a tenth of json.dumps's
    cost per delta), or json for what orjson refuses (integers past 64 bits)."""
    try:
        return orjson.dumps(chunk, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(chunk)

"""A display that streams a run's chunks to every socket watching the conversation."""

from __future__ import annotations

import asyncio
import time


def group_name(conversation_id: str) -> str:
    return f"conversation.{conversation_id}"


class ChannelDisplay:
    """``send`` may be called from any thread; a pump task forwards chunks in order
    to the conversation's channel-layer group (Redis when configured)."""

    def __init__(self, conversation_id: str, channel_layer, loop: asyncio.AbstractEventLoop) -> None:
        self._group = group_name(conversation_id)
        self._layer = channel_layer
        self._loop = loop
        self._queue: asyncio.Queue = asyncio.Queue()

    def send(self, chunk: dict) -> None:
        stamped = {**chunk, "ts": time.time() * 1000.0}  # emit time, ms: clients can measure relay latency
        self._loop.call_soon_threadsafe(self._queue.put_nowait, stamped)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)

    async def pump(self) -> None:
        """Forward chunks until ``close``. When the layer falls behind, text and
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
                await self._layer.group_send(self._group, {"type": "conversation.chunk", "chunk": chunk})


MERGEABLE = frozenset({"text_delta", "thinking"})


def coalesce(chunks: list[dict]) -> list[dict]:
    """Merge runs of consecutive same-type text chunks; everything else passes unchanged."""
    merged: list[dict] = []
    for chunk in chunks:
        previous = merged[-1] if merged else None
        if previous is not None and chunk["type"] in MERGEABLE and previous["type"] == chunk["type"]:
            merged[-1] = {**previous, "text": previous["text"] + chunk["text"]}
        else:
            merged.append(chunk)
    return merged

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
        while (chunk := await self._queue.get()) is not None:
            await self._layer.group_send(self._group, {"type": "conversation.chunk", "chunk": chunk})

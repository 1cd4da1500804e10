"""A stateless Messages API for load benchmarks, run as its own process.

Speaks just enough HTTP/1.1 on asyncio to stream (chunked, keep-alive): the first call of a
conversation gets a tool call (`plan`, its one step done), the call that carries its result gets
an answer of CHUNKS text deltas, one every DELAY seconds. The SSE bytes are
rendered once, by the same code as the scripted test server, so the model's
own cost stays out of the figures it serves.

Usage: python bench/_model_server.py FD CHUNKS DELAY [TOOL_USES]

TOOL_USES, a JSON list of [name, input, id], replaces the `plan` call (bench/cancel.py).

FD is a listening socket the caller bound and passed down (see turns.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm.scripted.render import LAST_CHUNK, http_chunk, sse, stream_events  # noqa: E402
from llm.scripted.script import ToolUse, Turn  # noqa: E402


def rendered(turn: Turn) -> list[tuple[str, bytes]]:
    return [(name, sse(name, data)) for name, data in stream_events(turn, model="bench-model", message_id="msg_bench")]


# The step is done at once: agentic mode's guardrail has no open step to remind of.
PLAN = [["plan", {"steps": [{"title": "answer", "status": "done"}]}, "toolu_plan"]]


async def serve(fd: int, chunks: int, delay: float, tool_uses: list | None = None) -> None:
    tool_turn = rendered(Turn(tool_uses=tuple(ToolUse(*use) for use in tool_uses or PLAN)))
    answer_turn = rendered(Turn(text=tuple(f"w{n} " for n in range(chunks))))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive, like the real API: one connection serves many calls
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
                body = json.loads(await reader.readexactly(length))
                last = body["messages"][-1]["content"]
                answered = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                for name, data in answer_turn if answered else tool_turn:
                    if answered and delay and name == "content_block_delta":
                        await asyncio.sleep(delay)
                    writer.write(http_chunk(data))
                    await writer.drain()
                writer.write(LAST_CHUNK)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, sock=socket.socket(fileno=fd))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    uses = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    asyncio.run(serve(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), uses))

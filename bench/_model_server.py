"""A stateless Messages API for load benchmarks, run as its own process.

Speaks just enough HTTP/1.1 on asyncio to stream (chunked, keep-alive): the first call of a
conversation gets a tool call (`plan`, its one step done), the call that carries its result gets
an answer of CHUNKS text deltas, one every DELAY seconds. The SSE bytes are
rendered once, by the same code as the scripted test server, so the model's
own cost stays out of the figures it serves.

Usage: python bench/_model_server.py FD CHUNKS DELAY [TOOL_USES] [--api chat|responses]

TOOL_USES, a JSON list of [name, input, id], replaces the `plan` call (bench/cancel.py).
`--api chat` serves the OpenAI-compatible Chat Completions stream instead (the same
turns, rendered by the scripted Chat Completions server's code, usage in the last chunk);
`--api responses` the Responses API's events (the scripted Responses server's code).

FD is a listening socket the caller bound and passed down (see turns.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llm.scripted import responses  # noqa: E402
from llm.scripted.chat import stream_chunks  # noqa: E402
from llm.scripted.render import LAST_CHUNK, http_chunk, sse, stream_events  # noqa: E402
from llm.scripted.script import ToolUse, Turn  # noqa: E402


def rendered(turn: Turn, api: str = "messages") -> list[tuple[bool, bytes]]:
    """(is a text delta, its SSE bytes) for each event of ``turn``'s stream."""
    return RENDER[api](turn)


def _messages_events(turn: Turn) -> list[tuple[bool, bytes]]:
    events = stream_events(turn, model="bench-model", message_id="msg_bench")
    return [(name == "content_block_delta", sse(name, data)) for name, data in events]


def _chat_chunks(turn: Turn) -> list[tuple[bool, bytes]]:
    chunks = stream_chunks(turn, model="bench-model", completion_id="chatcmpl-bench", usage=True)
    events = [(bool(c["choices"] and c["choices"][0]["delta"].get("content")), c) for c in chunks]
    return [(delta, b"data: " + json.dumps(c).encode() + b"\n\n") for delta, c in events] + [
        (False, b"data: [DONE]\n\n")
    ]


def _responses_events(turn: Turn) -> list[tuple[bool, bytes]]:
    events = responses.stream_events(turn, model="bench-model", response_id="resp_bench")
    return [(e["type"] == "response.output_text.delta", sse(e["type"], e)) for e in events]


RENDER = {"messages": _messages_events, "chat": _chat_chunks, "responses": _responses_events}


def answers_a_tool(body: dict) -> bool:
    """Whether the request carries a tool's result (Messages: a tool_result block; Chat: a tool
    message; Responses: a function_call_output item)."""
    if "input" in body:
        return any(item.get("type") == "function_call_output" for item in body["input"])
    for message in body["messages"]:
        if message.get("role") == "tool":
            return True
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                return True
    return False


# The step is done at once: agentic mode's guardrail has no open step to remind of.
PLAN = [["plan", {"steps": [{"title": "answer", "status": "done"}]}, "toolu_plan"]]


async def serve(fd: int, chunks: int, delay: float, tool_uses: list | None = None, api: str = "messages") -> None:
    tool_turn = rendered(Turn(tool_uses=tuple(ToolUse(*use) for use in tool_uses or PLAN)), api)
    answer_turn = rendered(Turn(text=tuple(f"w{n} " for n in range(chunks))), api)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive, like the real API: one connection serves many calls
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
                body = json.loads(await reader.readexactly(length))
                answered = _last_has_result(body) if api == "messages" else answers_a_tool(body)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                for is_delta, data in answer_turn if answered else tool_turn:
                    if answered and delay and is_delta:
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


def _last_has_result(body: dict) -> bool:
    last = body["messages"][-1]["content"]
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)


if __name__ == "__main__":
    argv = sys.argv[1:]
    api = "messages"
    if "--api" in argv:
        at = argv.index("--api")
        api = argv[at + 1]
        del argv[at : at + 2]
    uses = json.loads(argv[3]) if len(argv) > 3 else None
    asyncio.run(serve(int(argv[0]), int(argv[1]), float(argv[2]), uses, api))

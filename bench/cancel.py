"""How fast a cancel is answered, from the first one in a fresh server process on.

Starts the product as bench/turns.py does (uvicorn, the real ASGI app, a
throwaway SQLite database unless DATABASE_URL) and a model server whose tool
turn calls ``request_user_input`` (which waits for the user) beside ``plan``.
Over a real websocket, per round in the same server process:

* a **tool cancel**: once the calls are shown, ``{"type": "cancel", "tool_use_id": ...}``
  for the waiting call; measured to the server's ``cancel_requested`` answer and
  to that call's ``tool_result`` (``Cancelled``); the turn must go on to its answer;
* a **turn cancel** while the answer streams: measured to ``done``.

Prints each round's figures (ms); round 1 is the fresh process. The goal is
every figure under 100 ms.

Usage: python bench/cancel.py [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import _django
import turns

ASK = ["request_user_input", {"question": "Which city?"}, "toolu_ask"]
PLAN = ["search_tools", {"query": "weather"}, "toolu_search"]


async def tool_cancel(port: int, conversation_id: str, cookie: str) -> dict:
    async with connect(port, conversation_id, cookie) as ws:
        await ws.send(json.dumps({"type": "message", "text": "go"}))
        await until(ws, lambda c: c["type"] == "tool_call" and c["tool_use_id"] == "toolu_ask")
        sent = time.monotonic()
        await ws.send(json.dumps({"type": "cancel", "tool_use_id": "toolu_ask"}))
        await until(ws, lambda c: c["type"] == "cancel_requested")
        answered = time.monotonic()
        result = await until(ws, lambda c: c["type"] == "tool_result" and c["tool_use_id"] == "toolu_ask")
        stopped = time.monotonic()
        done = await until(ws, lambda c: c["type"] == "done")
        assert result["error"] and not done["cancelled"], (result, done)
    return {"answered_ms": (answered - sent) * 1000, "result_ms": (stopped - sent) * 1000}


async def turn_cancel(port: int, conversation_id: str, cookie: str) -> float:
    async with connect(port, conversation_id, cookie) as ws:
        await ws.send(json.dumps({"type": "message", "text": "go"}))
        await until(ws, lambda c: c["type"] == "tool_call" and c["tool_use_id"] == "toolu_ask")
        await ws.send(json.dumps({"type": "cancel", "tool_use_id": "toolu_ask"}))
        await until(ws, lambda c: c["type"] == "text_delta")
        sent = time.monotonic()
        await ws.send(json.dumps({"type": "cancel"}))
        done = await until(ws, lambda c: c["type"] == "done")
        assert done["cancelled"], done
    return (time.monotonic() - sent) * 1000


def connect(port: int, conversation_id: str, cookie: str):
    import websockets

    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
    return websockets.connect(url, additional_headers=headers, max_size=None, open_timeout=60)


async def until(ws, wanted) -> dict:
    while True:
        chunk = json.loads(await asyncio.wait_for(ws.recv(), timeout=60))
        if chunk["type"] == "error":
            raise RuntimeError(chunk["message"])
        if wanted(chunk):
            return chunk


def page_in_the_question_tool(pairs: list[tuple[str, str]]) -> None:
    from conversations.models import WorkingSetEntry

    for conversation_id, _ in pairs:
        WorkingSetEntry.objects.create(conversation_id=conversation_id, tool_name=ASK[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    database = _django.setup()
    model, model_port = turns.model_server(200, 0.02, [ASK, PLAN])
    pairs = turns.prepare(2 * args.rounds)
    page_in_the_question_tool(pairs)
    server = None
    results: dict = {"database": database}
    try:
        (server,), port = turns.serve_product(model_port)
        for n in range(args.rounds):
            tool = asyncio.run(tool_cancel(port, *pairs[2 * n]))
            results[f"round{n + 1}_tool_cancel_answered_ms"] = tool["answered_ms"]
            results[f"round{n + 1}_tool_cancel_result_ms"] = tool["result_ms"]
            results[f"round{n + 1}_turn_cancel_done_ms"] = asyncio.run(turn_cancel(port, *pairs[2 * n + 1]))
    finally:
        for process in (server, model):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()

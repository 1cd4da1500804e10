"""Many conversations at once over real websockets: relay latency and memory.

Starts the product (daphne, the real ASGI app) in a subprocess against a
throwaway SQLite database (or DATABASE_URL; REDIS_URL switches the channel
layer to Redis), a stateless model server speaking the Messages API on
loopback, and N websocket clients. Each conversation asks once: the model
calls a tool (`plan`), gets its result, then streams an answer of --chunks
text chunks (one every --chunk-delay seconds, like a model writing). For
every chunk the client measures relay latency: the moment the server-side
display emitted it (its `ts`) to the moment the client received it.

Prints completed, failed, p50/p99 relay latency (ms), chunks relayed, and the
peak RSS of the server process and of this client.

Usage: python bench/turns.py [--conversations 200] [--chunks 500] [--chunk-delay 0.02] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import _django

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_server(chunks: int, delay: float) -> ThreadingHTTPServer:
    """A stateless Messages API: a tool call first, then a streamed answer."""
    from conversations.llm.scripted.render import sse, stream_events
    from conversations.llm.scripted.script import ToolUse, Turn

    tool_turn = Turn(tool_uses=(ToolUse("plan", {"steps": [{"title": "answer"}]}, "toolu_plan"),))
    answer_turn = Turn(text=tuple(f"w{n} " for n in range(chunks)))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            last = body["messages"][-1]["content"]
            answered = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)
            turn = answer_turn if answered else tool_turn
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for sent, (name, data) in enumerate(stream_events(turn, model=body["model"], message_id="msg_bench")):
                if answered and delay and name == "content_block_delta":
                    time.sleep(delay)
                self.wfile.write(sse(name, data))
                self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    server.daemon_threads = True
    Thread(target=server.serve_forever, daemon=True).start()
    return server


def prepare(conversations: int) -> list[tuple[str, str]]:
    """Users, memberships, conversations and session cookies: [(conversation id, cookie)]."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from conversations.models import Conversation
    from registry.models import ModelConfig, TenantMembership

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "bench-model"})
    User = get_user_model()
    pairs = []
    for n in range(conversations):
        user, _ = User.objects.get_or_create(username=f"bench{n}")
        TenantMembership.objects.get_or_create(user=user, defaults={"tenant_id": "bench"})
        conversation = Conversation.objects.create(tenant_id="bench", user=user, title=f"bench {n}")
        client = Client()
        client.force_login(user)
        pairs.append((conversation.pk, f"sessionid={client.cookies['sessionid'].value}"))
    return pairs


async def converse(port: int, conversation_id: str, cookie: str, latencies: list[float]) -> bool:
    import websockets

    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
    async with websockets.connect(url, additional_headers=headers, max_size=None, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "message", "text": "go"}))
        while True:
            chunk = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
            if chunk["type"] == "text_delta":
                latencies.append(time.time() * 1000.0 - chunk["ts"])
            elif chunk["type"] == "error":
                return False
            elif chunk["type"] == "done":
                return not chunk.get("cancelled")


async def run_clients(port: int, pairs: list[tuple[str, str]]) -> tuple[int, int, list[float]]:
    latencies: list[float] = []
    results = await asyncio.gather(*(converse(port, c, k, latencies) for c, k in pairs), return_exceptions=True)
    completed = sum(1 for r in results if r is True)
    return completed, len(results) - completed, latencies


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited while starting")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("the server did not start listening")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--chunk-delay", type=float, default=0.02)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    database = _django.setup()
    model = model_server(args.chunks, args.chunk_delay)
    pairs = prepare(args.conversations)
    port = free_port()
    env = {
        **os.environ,
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "ANTHROPIC_API_KEY": "bench-key",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model.server_address[1]}",
        "EUNICE_LLM_MAX_RETRIES": "0",
        "EUNICE_LOG_FLUSH_SECONDS": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "eunice.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server)
        started = time.monotonic()
        completed, failed, latencies = asyncio.run(run_clients(port, pairs))
        elapsed = time.monotonic() - started
        server_rss = peak_rss_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
        model.shutdown()
    latencies.sort()
    results = {
        "conversations": args.conversations,
        "chunks_per_answer": args.chunks,
        "channel_layer": "redis" if os.environ.get("REDIS_URL") else "in-memory",
        "database": database,
        "completed": completed,
        "failed": failed,
        "chunks_relayed": len(latencies),
        "relay_p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "relay_p99_ms": round(latencies[int(len(latencies) * 0.99)], 2) if latencies else None,
        "seconds": round(elapsed, 1),
        "server_peak_rss_mb": round(server_rss, 1),
        "client_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()

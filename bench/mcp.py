"""MCP call latency through execute_tool vs a raw SDK session, same server, same run.

For stdio and Streamable HTTP (loopback) it prints, per transport:
  registry_ms   median per-call latency of execute_tool on the bench server's add (p95 beside it)
  raw_ms        median of ClientSession.call_tool("add", …) on a session of our own, timed
                inside its event loop (no thread hop)
  raw_hop_ms    the same session called from this thread, as sync code would call it:
                asyncio.run_coroutine_threadsafe(...).result() around each call
  async_ms      median of ``await aexecute_tool`` (a turn's call), timed inside a loop of
                its own: the call runs on that loop and hops to the MCP loop and back
  async_here_ms the same awaited on the MCP loop itself: no hop at all
The paths take turns in batches of 100 calls, so all see the same load on a shared machine.
  ratio         registry_ms / raw_ms (target ≤ 1.15): a synchronous caller's call
  async_ratio   async_ms / raw_ms: a turn's call; async_here_ratio likewise
  hop_ratio     raw_hop_ms / raw_ms: what crossing threads alone costs, with no registry
  calls_per_s   sequential execute_tool calls per second (target ≥ 300 over stdio);
                async_calls_per_s likewise for aexecute_tool
  switches_*    voluntary context switches of this process per call (per path):
                the thread wake-ups a call makes, which load does not change (Linux only)

Usage: python bench/mcp.py [--calls N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import glob
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

import _django

# This file is called mcp.py: keep it from shadowing the SDK package of that name.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

DEMO = str(_django.ROOT / "tests" / "mcp" / "servers" / "demo.py")


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.95) - 1] * 1000


BATCH = 100  # calls per turn: the paths take turns, so all see the same machine load


def voluntary_switches() -> int:
    """Voluntary context switches of every thread of this process so far (0 without /proc)."""
    total = 0
    for status in glob.glob("/proc/self/task/*/status"):
        try:
            with open(status) as lines:
                total += sum(int(line.split()[1]) for line in lines if line.startswith("voluntary_ctxt_switches"))
        except OSError:  # the thread ended between the listing and the read
            continue
    return total


def registry_server(transport: str, target: str):
    """Create and connect the "bench" server through the manager; returns its row."""
    from registry.mcp import manager as manager_module
    from registry.mcp.config import ServerConfig
    from registry.mcp.manager import get_manager
    from registry.models import MCPServer

    # Connecting is not what is measured, and on a loaded machine the SDK's import alone
    # can take longer than the product's 10 s connect timeout.
    manager_module.CONNECT_TIMEOUT = 60.0

    MCPServer.objects.filter(name="bench").delete()
    fields = {"command": sys.executable, "args": [DEMO]} if transport == "stdio" else {"url": target}
    server = MCPServer.objects.create(
        name="bench",
        tenant_id="bench",
        transport=transport,
        allow_private_network=True,
        approval_policy="auto",
        **fields,
    )
    get_manager().connect(ServerConfig.from_model(server))
    return server


def registry_calls(count: int) -> list[float]:
    from registry.context import ToolContext
    from registry.mcp.naming import tool_name
    from registry.registry import get_registry

    registry, context = get_registry(), ToolContext(tenant_id="bench", user_id="bench")
    name = tool_name("bench", "bench", "add")
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        result = registry.execute_tool(name, {"a": 1, "b": 2}, context)
        samples.append(time.perf_counter() - start)
    assert result.error is None, result.content
    return samples


class Turn:
    """A loop of its own on a thread, as a turn's is: ``aexecute_tool`` timed inside it."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        from registry.context import ToolContext
        from registry.mcp.naming import tool_name
        from registry.registry import get_registry

        self.registry, self.context = get_registry(), ToolContext(tenant_id="bench", user_id="bench")
        self.name = tool_name("bench", "bench", "add")
        self.thread = None
        if loop is None:
            loop = asyncio.new_event_loop()
            self.thread = threading.Thread(target=loop.run_forever, daemon=True)
            self.thread.start()
        self.loop = loop

    async def _calls(self, count: int) -> list[float]:
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            result = await self.registry.aexecute_tool(self.name, {"a": 1, "b": 2}, self.context)
            samples.append(time.perf_counter() - start)
        assert result.error is None, result.content
        return samples

    def calls(self, count: int) -> list[float]:
        return asyncio.run_coroutine_threadsafe(self._calls(count), self.loop).result(120)

    def close(self) -> None:
        if self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


class RawSession:
    """A raw SDK ClientSession on a loop of its own; each batch is timed inside that loop."""

    def __init__(self, transport: str, target: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self.done = asyncio.run_coroutine_threadsafe(self._serve(transport, target, ready), self.loop)
        ready.result(90)

    async def _serve(self, transport: str, target: str, ready: concurrent.futures.Future) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        self.requests: asyncio.Queue = asyncio.Queue()
        opener = (
            stdio_client(StdioServerParameters(command=sys.executable, args=[DEMO]))
            if transport == "stdio"
            else streamable_http_client(target)
        )
        async with opener as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self.session = session
            ready.set_result(None)
            while (request := await self.requests.get()) is not None:
                count, reply = request
                samples = []
                for _ in range(count):
                    start = time.perf_counter()
                    await session.call_tool("add", {"a": 1, "b": 2})
                    samples.append(time.perf_counter() - start)
                reply.set_result(samples)

    def calls(self, count: int) -> list[float]:
        reply: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.requests.put_nowait, (count, reply))
        return reply.result(120)

    def hop_calls(self, count: int) -> list[float]:
        """``count`` calls made from this thread, each handed to the session's loop and waited for."""
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            asyncio.run_coroutine_threadsafe(self.session.call_tool("add", {"a": 1, "b": 2}), self.loop).result(30)
            samples.append(time.perf_counter() - start)
        return samples

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.requests.put_nowait, None)
        self.done.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def start_http() -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, DEMO, "http", str(port)], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    deadline = time.monotonic() + 30
    for line in process.stderr:
        if "Uvicorn running on" in line or time.monotonic() > deadline:
            break
    return process, f"http://127.0.0.1:{port}/mcp"


def measure(transport: str, target: str, calls: int) -> dict:
    from registry.mcp.manager import get_manager

    server, raw = registry_server(transport, target), RawSession(transport, target)
    turn, here = Turn(), Turn(get_manager().loop())
    paths = {
        "raw": raw.calls,
        "raw_hop": raw.hop_calls,
        "registry": registry_calls,
        "async": turn.calls,
        "async_here": here.calls,
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    switches = dict.fromkeys(paths, 0)
    try:
        for run in paths.values():
            run(50)  # warm-up
        for _ in range(max(1, calls // BATCH)):
            for name, run in paths.items():
                before = voluntary_switches()
                samples[name] += run(BATCH)
                switches[name] += voluntary_switches() - before
    finally:
        raw.close()
        turn.close()
        get_manager().disconnect(server.pk)
        server.delete()
    registry_samples = samples["registry"]
    registry_ms, registry_p95 = summary(registry_samples)
    raw_ms, raw_p95 = summary(samples["raw"])
    raw_hop_ms, _ = summary(samples["raw_hop"])
    async_ms, async_p95 = summary(samples["async"])
    here_ms, _ = summary(samples["async_here"])
    return {
        "registry_ms": round(registry_ms, 3),
        "registry_p95_ms": round(registry_p95, 3),
        "raw_ms": round(raw_ms, 3),
        "raw_p95_ms": round(raw_p95, 3),
        "raw_hop_ms": round(raw_hop_ms, 3),
        "async_ms": round(async_ms, 3),
        "async_p95_ms": round(async_p95, 3),
        "async_here_ms": round(here_ms, 3),
        "ratio": round(registry_ms / raw_ms, 3),
        "async_ratio": round(async_ms / raw_ms, 3),
        "async_here_ratio": round(here_ms / raw_ms, 3),
        "hop_ratio": round(raw_hop_ms / raw_ms, 3),
        "calls_per_s": round(len(registry_samples) / sum(registry_samples), 1),
        "async_calls_per_s": round(len(samples["async"]) / sum(samples["async"]), 1),
        **{f"switches_{name}": round(switches[name] / len(samples[name]), 2) for name in paths},
        "load": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("EUNICE_LOG_FLUSH_SECONDS", "1")
    _django.setup()
    from registry.mcp.manager import get_manager

    results = {"calls": args.calls, "stdio": measure("stdio", "", args.calls)}
    process, url = start_http()
    try:
        results["streamable_http"] = measure("streamable_http", url, args.calls)
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()
        get_manager().stop()
    if args.json:
        print(json.dumps(results))
        return
    for transport in ("stdio", "streamable_http"):
        print(transport, " ".join(f"{k}={v}" for k, v in results[transport].items()))


if __name__ == "__main__":
    main()

"""What serving a tool over MCP costs: Eunice's endpoint against execute_tool in-process.

Two server processes on loopback, each serving one tool, ``add``, that adds two integers:
  eunice   the product's ASGI app (Django behind MCPEndpoint, as eunice/asgi.py mounts it),
           the tool in a bundle, called with an API token: Host/Origin check, token lookup,
           rate count (its limit raised out of the way), the registry's one path, the log on
  raw      the SDK's own low-level Server with the same handler, nothing else
and the same real SDK client (streamable HTTP) calling each, at both revisions
("legacy": 2025-11-25 with a session; "2026-07-28": stateless). Prints, per revision:
  inproc_ms        median execute_tool of the same tool in this process (no HTTP at all)
  raw_ms           median call_tool round trip to the raw SDK server (p95 beside it)
  served_ms        median call_tool round trip to Eunice's endpoint (p95 beside it)
  added_ms         served_ms - inproc_ms: the issue's figure (goal ≤ 2 ms on loopback)
  added_vs_raw_ms  served_ms - raw_ms: what Eunice adds to the SDK's own HTTP serving
  calls_per_s      sequential calls per second through the endpoint (goal ≥ 300)
  calls_per_s_x4   four clients at once, calls per second in all
The paths take turns in batches of 50 calls, so both see the same load.

Usage: python bench/mcp_server.py [--calls N] [--json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import _django

sys.path.insert(0, str(_django.ROOT))
from tests.ports import free_port, listens  # noqa: E402 (needs the project on the path)

# bench/mcp.py would shadow the SDK package of that name: keep this directory off the path.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

BATCH = 50
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def add(inputs: dict, context: object) -> str:
    return str(inputs["a"] + inputs["b"])


# --- the servers (each runs in a process of its own: --serve eunice|raw PORT) -----------


def serve_eunice(port: int) -> None:
    import uvicorn
    from django.core.asgi import get_asgi_application

    from mcpserver.endpoint import MCPEndpoint, MCPMount
    from registry.registry import get_registry

    get_registry().register_handler("bench_add", add, inline=True)
    app = MCPMount(get_asgi_application(), MCPEndpoint())
    # Profiled from here (not with bench/_profiled.py, whose profile would also hold the
    # imports and the migration check before): only what serving the calls costs.
    profile_to = os.environ.get("BENCH_PROFILE_TO")
    if not profile_to:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    finally:
        profiler.disable()
        profiler.dump_stats(profile_to)


def serve_raw(port: int) -> None:
    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel.server import Server

    async def list_tools(ctx, params):  # noqa: ANN001, ANN202
        return types.ListToolsResult(tools=[types.Tool(name="bench_add", input_schema=SCHEMA)])

    async def call_tool(ctx, params):  # noqa: ANN001, ANN202
        return types.CallToolResult(content=[types.TextContent(text=add(params.arguments or {}, None))])

    server = Server("raw", on_list_tools=list_tools, on_call_tool=call_tool)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


def started(kind: str, database: str, profile_to: str = "") -> tuple[subprocess.Popen, str]:
    port = free_port()
    # The rate limit is counted on every request (as in production) but set out of the way:
    # a bench client makes far more than the default 600 requests a minute.
    env = {**os.environ, "DATABASE_URL": database, "EUNICE_API_RATE": "100000/s"}
    if profile_to and kind == "eunice":
        env["BENCH_PROFILE_TO"] = profile_to
    process = subprocess.Popen([sys.executable, __file__, "--serve", kind, str(port)], env=env)
    deadline = time.monotonic() + 120
    while not listens(process.pid, port):  # its own listener: another process may hold the port
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise SystemExit(f"the {kind} server did not start")
        time.sleep(0.1)
    return process, f"http://127.0.0.1:{port}/mcp" + ("/bench/" if kind == "eunice" else "")


# --- the client ---------------------------------------------------------------------


class Session:
    """One SDK client connected to one server, driven from this process's loop."""

    def __init__(self, url: str, token: str, mode: str) -> None:
        self.url, self.token, self.mode = url, token, mode

    async def __aenter__(self) -> Session:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self.http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        self.client = Client(streamable_http_client(self.url, http_client=self.http), mode=self.mode)
        await self.client.__aenter__()
        result = await self.client.call_tool("bench_add", {"a": 2, "b": 3})
        assert not result.is_error and "5" in result.content[0].text, result
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.__aexit__(None, None, None)
        await self.http.aclose()

    async def calls(self, count: int) -> list[float]:
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            await self.client.call_tool("bench_add", {"a": 2, "b": 3})
            samples.append(time.perf_counter() - start)
        return samples


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[max(int(len(ordered) * 0.95) - 1, 0)] * 1000


async def measure_mode(urls: dict[str, str], token: str, mode: str, calls: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {"raw": [], "eunice": []}
    async with Session(urls["raw"], token, mode) as raw, Session(urls["eunice"], token, mode) as served:
        for _ in range(10):  # warm both
            await raw.calls(5)
            await served.calls(5)
        while len(samples["eunice"]) < calls:
            samples["raw"] += await raw.calls(BATCH)
            samples["eunice"] += await served.calls(BATCH)
    together = await concurrent_rate(urls["eunice"], token, mode, max(calls // 4, 50))
    raw_ms, raw_p95 = summary(samples["raw"])
    served_ms, served_p95 = summary(samples["eunice"])
    return {
        "raw_ms": raw_ms,
        "raw_p95_ms": raw_p95,
        "served_ms": served_ms,
        "served_p95_ms": served_p95,
        "calls_per_s": len(samples["eunice"]) / sum(samples["eunice"]),
        "calls_per_s_x4": together,
    }


async def concurrent_rate(url: str, token: str, mode: str, each: int) -> float:
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Session(url, token, mode)) for _ in range(4)]
        start = time.perf_counter()
        await asyncio.gather(*(session.calls(each) for session in sessions))
        return 4 * each / (time.perf_counter() - start)


def inproc_ms(calls: int) -> float:
    from registry.context import ToolContext
    from registry.registry import get_registry

    registry = get_registry()
    registry.register_handler("bench_add", add, inline=True)
    context = ToolContext(tenant_id="bench", user_id="1")
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        registry.execute_tool("bench_add", {"a": 2, "b": 3}, context)
        samples.append(time.perf_counter() - start)
    return summary(samples)[0]


def fixtures() -> str:
    """The tool, a bundle that serves it, a user of the tenant and their API token."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from mcpserver.models import Bundle
    from registry.models import TenantMembership, ToolDefinition, ToolStatus, ToolType

    ToolDefinition.objects.update_or_create(
        name="bench_add",
        defaults={
            "description": "Add two integers.",
            "input_schema": SCHEMA,
            "tool_type": ToolType.SYSTEM,
            "status": ToolStatus.APPROVED,
            "category": "bench",
            "tenant_id": "bench",
        },
    )
    Bundle.objects.update_or_create(tenant_id="bench", slug="bench", defaults={"tools": ["bench_add"]})
    user, _ = get_user_model().objects.get_or_create(username="bench-mcp")
    TenantMembership.objects.update_or_create(user=user, defaults={"tenant_id": "bench"})
    return Token.objects.get_or_create(user=user)[0].key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--database-url")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="profile Eunice's server process: Python calls per served call and the N costliest functions",
    )
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        kind, port = args.serve
        if kind == "eunice":
            _django.setup(os.environ["DATABASE_URL"], seed=False)
            serve_eunice(int(port))
        else:
            serve_raw(int(port))
        return
    database = _django.setup(args.database_url, seed=False)
    token = fixtures()
    url = os.environ["DATABASE_URL"]
    profile_to = os.path.join(tempfile.mkdtemp(), "eunice.prof") if args.profile else ""
    servers = {kind: started(kind, url, profile_to) for kind in ("raw", "eunice")}
    try:
        urls = {kind: target for kind, (_, target) in servers.items()}
        results: dict[str, object] = {"calls": args.calls, "database": database}
        results["inproc_ms"] = inproc = inproc_ms(args.calls)
        for mode in ("legacy", "2026-07-28"):
            figures = asyncio.run(measure_mode(urls, token, mode, args.calls))
            figures["added_ms"] = figures["served_ms"] - inproc
            figures["added_vs_raw_ms"] = figures["served_ms"] - figures["raw_ms"]
            results.update({f"{mode}.{key}": value for key, value in figures.items()})
    finally:
        for process, _ in servers.values():
            # SIGINT: uvicorn re-raises the signal it stopped on, and only SIGINT (as
            # KeyboardInterrupt) lets a profiled server write its profile first.
            process.send_signal(signal.SIGINT)
            process.wait(30)
    _django.print_results(results, args.json)
    if profile_to:
        print_profile(profile_to, args.profile)


def print_profile(path: str, top: int) -> None:
    """The Python calls per served call on the server's event loop (a figure load does not
    move; work on other threads is not in the profile) and its ``top`` costliest
    functions, cumulative. Served calls are counted by ``content_blocks``, which the
    endpoint calls once for each: a coroutine's count (``aexecute_tool``'s) is of its
    resumptions, which is what a change to the call's trips off the loop changes."""
    import pstats

    stats = pstats.Stats(path)
    served = sum(calls for (_, _, name), (_, calls, *_rest) in stats.stats.items() if name == "content_blocks")
    total = sum(calls for (_, calls, *_rest) in stats.stats.values())
    print(f"server: {served} calls served, {total / max(served, 1):,.0f} Python calls per served call on its loop")
    stats.sort_stats("cumulative").print_stats(top)


if __name__ == "__main__":
    main()

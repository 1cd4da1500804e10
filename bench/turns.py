"""Many conversations at once over real websockets: relay latency and memory.

Starts the product (uvicorn, as scripts/run does, with the real ASGI app) in a subprocess against a
throwaway SQLite database (or DATABASE_URL; REDIS_URL switches the channel
layer to Redis), a stateless model server speaking the Messages API on
loopback, and N websocket clients. Each conversation (in agentic mode, where
`plan` is offered: only offered tools run) asks once: the model calls a tool
(`plan`), gets its result, then streams an answer of --chunks
text chunks (one every --chunk-delay seconds, like a model writing). For
every chunk the client measures relay latency: the moment the server-side
display emitted it (its `ts`) to the moment the client received it.

Prints completed (the tool ran, the whole answer arrived, in order, and the turn ended),
failed, p50/p99 relay latency (ms), messages relayed, the server's CPU time
per chunk, and the peak RSS of the server process and of this client.

With `--processes N` the product runs as `scripts/run --workers N` runs it: N server
processes (`python -m eunice.serve --fd`), each on its own listening socket bound to
the one port with SO_REUSEPORT (eunice/supervisor.py), so the kernel spreads the
conversations evenly over them. That needs PostgreSQL (DATABASE_URL) and
Redis (REDIS_URL); the CPU of each process is printed, and what a bigger machine needs
follows from it.

The clients are the measuring instrument: what they have not read yet counts as relay
latency. One client process reading 400 sockets fell behind on a busy machine (over a
megabyte unread in its receive queues while the servers' send queues were near empty);
`--client-processes K` (default: as many as `--processes`) splits the conversations over
K client processes, and their CPU is printed (clients_cpu_percent, all of them together).

With `--api chat` the model server speaks the OpenAI-compatible Chat Completions API
instead, and the chat role's row uses the `openai` provider (the real `openai` SDK);
with `--api responses` the Responses API and the `openai_responses` provider.

Usage: python bench/turns.py [--conversations 200] [--chunks 500] [--chunk-delay 0.02] [--api messages|chat|responses]
       [--processes 1] [--client-processes N] [--per-second] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import _django
from _machine import reference_ms

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 20  # the relay p99 the bench is held to (#5)
# --api: the chat role's provider for each OpenAI-compatible API the model server speaks.
OPENAI_PROVIDERS = {"chat": "openai", "responses": "openai_responses"}
START_SECONDS = 300  # how long the product may take to answer /health/


def listening_socket() -> socket.socket:
    """A loopback socket already bound and listening, for a child process to serve on.

    The child inherits it (``pass_fds``), so no other process can take the port
    between choosing it and serving on it.
    """
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4096)
    listener.set_inheritable(True)
    return listener


def model_server(
    chunks: int, delay: float, tool_uses: list | None = None, api: str = "messages"
) -> tuple[subprocess.Popen, int]:
    """The model API the server talks to, in its own process (bench/_model_server.py)."""
    extra = ([json.dumps(tool_uses)] if tool_uses else []) + (["--api", api] if api != "messages" else [])
    with listening_socket() as listener:
        fd, port = listener.fileno(), listener.getsockname()[1]
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "_model_server.py"), str(fd), str(chunks), str(delay), *extra],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            pass_fds=(fd,),
        )
    wait_for_port(port, process)
    return process, port


def prepare(conversations: int, model_row: dict | None = None) -> list[tuple[str, str]]:
    """Users, memberships, conversations and session cookies: [(conversation id, cookie)].
    ``model_row``: the chat role's ModelConfig fields (default: Anthropic's provider)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from conversations.models import Conversation
    from llm.models import ModelConfig
    from registry.models import TenantMembership

    defaults = model_row or {"provider": "anthropic", "model": "bench-model"}
    ModelConfig.objects.update_or_create(role="chat", defaults=defaults)
    User = get_user_model()
    pairs = []
    for n in range(conversations):
        user, _ = User.objects.get_or_create(username=f"bench{n}")
        TenantMembership.objects.get_or_create(user=user, defaults={"tenant_id": "bench"})
        conversation = Conversation.objects.create(tenant_id="bench", user=user, title=f"bench {n}", mode="agentic")
        client = Client()
        client.force_login(user)
        pairs.append((conversation.pk, f"sessionid={client.cookies['sessionid'].value}"))
    return pairs


@dataclass
class Samples:
    """What the clients measured: per text message its relay latency and the
    wall-clock time it arrived (ms, in the same order), and per answer the
    time from sending the message to its first chunk (ms)."""

    latencies: list[float] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)
    first_chunks: list[float] = field(default_factory=list)


async def converse(port: int, conversation_id: str, cookie: str, chunks: int, samples: Samples) -> str:
    """One conversation; "" when its tool ran, its whole answer arrived, in order, and the
    turn ended, else why not (in a few words, for the failure tally)."""
    import websockets

    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{port}"}
    received: list[str] = []
    tool_ran = False
    async with websockets.connect(url, additional_headers=headers, max_size=None, open_timeout=60) as ws:
        await ws.send(json.dumps({"type": "message", "text": "go"}))
        sent = time.monotonic()
        while True:
            chunk = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
            if chunk["type"] == "text_delta":
                now = time.time() * 1000.0
                samples.latencies.append(now - chunk["ts"])
                samples.arrivals.append(now)
                if not received:
                    samples.first_chunks.append((time.monotonic() - sent) * 1000.0)
                received.append(chunk["text"])
            elif chunk["type"] == "tool_result":
                tool_ran = not chunk.get("error") and chunk.get("content", "").startswith("✓")
            elif chunk["type"] == "error":
                return f"error: {str(chunk.get('message'))[:80]}"
            elif chunk["type"] == "done":
                if chunk.get("cancelled"):
                    return "cancelled"
                if not tool_ran:
                    return "the tool did not run"
                return "" if "".join(received) == answer_text(chunks) else "the answer arrived incomplete"


def answer_text(chunks: int) -> str:
    return "".join(f"w{n} " for n in range(chunks))


async def run_clients(port: int, pairs: list[tuple[str, str]], chunks: int) -> tuple[int, Counter, Samples]:
    """How many conversations completed, why the others did not, and what was measured."""
    samples = Samples()
    results = await asyncio.gather(*(converse(port, c, k, chunks, samples) for c, k in pairs), return_exceptions=True)
    failures = Counter(r if isinstance(r, str) else _why(r) for r in results if r != "")
    return len(results) - sum(failures.values()), failures, samples


def clients_in_processes(
    port: int, pairs: list[tuple[str, str]], chunks: int, processes: int
) -> tuple[int, Counter, Samples, float, float]:
    """The conversations split over ``processes`` client processes, run at once: how many
    completed, why the others did not, what was measured, the clients' CPU seconds and the
    largest client's peak RSS (MB).

    One process reading 400 sockets fell behind on a busy machine (a megabyte unread in
    its sockets' receive queues), and what it had not read yet counted as relay latency.
    """
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # not fork: this process holds Django's connections
    shares = [pairs[n::processes] for n in range(processes)]
    with context.Pool(processes) as pool:
        results = pool.starmap(_client_process, [(port, share, chunks) for share in shares if share])
    failures: Counter = Counter()
    completed, samples, cpu, rss = 0, Samples(), 0.0, 0.0
    for done, failed, measured, seconds, peak in results:
        completed += done
        failures.update(failed)
        samples.latencies += measured.latencies
        samples.arrivals += measured.arrivals
        samples.first_chunks += measured.first_chunks
        cpu += seconds
        rss = max(rss, peak)
    return completed, failures, samples, cpu, rss


def _client_process(port: int, pairs: list[tuple[str, str]], chunks: int) -> tuple[int, Counter, Samples, float, float]:
    """One client process's share (see ``clients_in_processes``), and its CPU seconds and peak RSS (MB)."""
    gc.collect()
    gc.freeze()
    gc.disable()  # the clients are the measuring instrument: no collector pauses (see main)
    before = cpu_seconds(os.getpid())
    completed, failures, samples = asyncio.run(run_clients(port, pairs, chunks))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return completed, failures, samples, cpu_seconds(os.getpid()) - before, peak


def _why(exc: BaseException) -> str:
    """An exception a client ended with, and what caused it (a handshake's EOF, say)."""
    cause = exc.__cause__ or exc.__context__
    return f"{type(exc).__name__}" + (f" ({type(cause).__name__}: {str(cause)[:60]})" if cause else "")


def percentile(ordered: list[float], fraction: float) -> float | None:
    return round(ordered[min(int(len(ordered) * fraction), len(ordered) - 1)], 2) if ordered else None


def per_second(samples: Samples) -> list[dict]:
    """Relay latency by the second (from the first arrival) its messages arrived:
    shows whether the tail is spread out or comes in bursts, and when."""
    if not samples.arrivals:
        return []
    start = min(samples.arrivals)
    seconds: dict[int, list[float]] = {}
    for arrived, latency in zip(samples.arrivals, samples.latencies, strict=True):
        seconds.setdefault(int((arrived - start) // 1000), []).append(latency)
    rows = []
    for second in sorted(seconds):
        latencies = sorted(seconds[second])
        rows.append(
            {
                "second": second,
                "messages": len(latencies),
                "p99_ms": percentile(latencies, 0.99),
                "max_ms": round(latencies[-1], 2),
                f"over_{TARGET_MS}_ms": sum(1 for latency in latencies if latency > TARGET_MS),
            }
        )
    return rows


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60, path: str | None = None) -> None:
    """Wait until the process serves: a connection is accepted, or with ``path``, an HTTP GET of it answers 200.

    The socket listens before the child has loaded its code (the bench bound
    it), so for the product a connection alone does not mean it is ready.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the server exited while starting")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as probe:
                if path is None:
                    return
                probe.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
                if probe.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError("the server did not start serving")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve_product(
    model_port: int, server: str = "uvicorn", ws: str = "websockets", processes: int = 1, profile: str | None = None
) -> tuple[list[subprocess.Popen], int]:
    """The product in subprocesses (as scripts/run serves it) against ``model_port``'s model,
    once it answers /health/: (its processes, port). ``processes`` above 1: that many
    ``eunice.serve --fd`` processes on the one socket, as ``scripts/run --workers`` starts them.
    ``profile``: run each under cProfile (its event loop's thread), written to that path
    (with the process's index appended when there are several) when it exits."""
    if processes > 1:  # one socket each, as scripts/run --workers binds them (eunice/supervisor.py)
        from eunice import supervisor

        sockets = supervisor.listeners("127.0.0.1", 0, processes)
    else:
        sockets = [listening_socket()]
    port = sockets[0].getsockname()[1]
    env = {
        **os.environ,
        "SECRET_KEY": os.environ["SECRET_KEY"],
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "ANTHROPIC_API_KEY": "bench-key",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}",
        "EUNICE_LLM_MAX_RETRIES": "0",
        "EUNICE_PRELOAD_OPENAI": "1",
        "EUNICE_LOG_FLUSH_SECONDS": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "EUNICE_JOBS": "0",
        "UVICORN_LOG_LEVEL": "warning",
    }
    command = {
        "daphne": ["-m", "daphne", "--fd", "{fd}", "eunice.asgi:application"],
        "uvicorn": [
            "-m",
            "uvicorn",
            "--fd",
            "{fd}",
            "--log-level",
            "warning",
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--ws",
            ws,
            "--ws-per-message-deflate",
            "false",
            "--ws-max-size",
            "1048576",
            "--lifespan",
            "off",
            "eunice.asgi:application",
        ],
    }[server]
    if processes > 1:
        command = ["-m", "eunice.serve", "--fd", "{fd}"]
    started = [
        subprocess.Popen(
            [
                sys.executable,
                *(_profiler(profile, n, processes) if profile else []),
                *(part.format(fd=listener.fileno()) for part in command),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(listener.fileno(),),
        )
        for n, listener in enumerate(sockets)
    ]
    try:
        # Its start (imports, warm-up) took two minutes on a machine shared by many loads.
        for process in started:
            wait_for_port(port, process, timeout=START_SECONDS, path="/health/")
        # /health/ may have been answered by the first process up: wait until every one
        # has loaded its code, or the first conversations would all land on it.
        for process in started:
            wait_until_serving(process)
    except BaseException:
        for process in started:  # a server that never answered is not left running
            process.kill()
            process.wait()
        raise
    finally:
        for listener in sockets:  # the servers hold their own copies
            listener.close()
    return started, port


def _profiler(path: str, index: int, processes: int) -> list[str]:
    """The arguments that run a server process under cProfile (bench/_profiled.py), written to
    ``path`` (``path.N`` for process N of several) when the bench stops it."""
    return [str(ROOT / "bench" / "_profiled.py"), path if processes == 1 else f"{path}.{index}"]


def wait_until_serving(process: subprocess.Popen, timeout: float = START_SECONDS) -> None:
    """Until the process has imported the ASGI app (its CPU time stops climbing for a second)."""
    deadline, last = time.monotonic() + timeout, -1.0
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("a server process exited while starting")
        now = cpu_seconds(process.pid)
        if now - last < 0.05:
            return
        last = now
        time.sleep(1.0)
    raise TimeoutError("a server process did not finish starting")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--chunk-delay", type=float, default=0.02)
    parser.add_argument(
        "--server",
        choices=("uvicorn", "daphne"),
        default="uvicorn",
        help="uvicorn, as scripts/run serves the product (default), or daphne for comparison",
    )
    parser.add_argument(
        "--ws",
        choices=("websockets", "websockets-sansio"),
        default="websockets",
        help="uvicorn's websocket implementation (scripts/run uses websockets)",
    )
    parser.add_argument(
        "--api",
        choices=("messages", *OPENAI_PROVIDERS),
        default="messages",
        help="the model server's API: Anthropic's Messages (default), or OpenAI-compatible Chat Completions "
        "or Responses",
    )
    parser.add_argument(
        "--per-second", action="store_true", help="also print relay latency by the second the messages arrived in"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="server processes on the one socket, as scripts/run --workers N (above 1: PostgreSQL and Redis)",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        help="split the websocket clients over this many processes, so that the measuring instrument "
        "keeps up on a busy machine (default: as many as --processes)",
    )
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="run the server under cProfile and write its profile (pstats) there (PATH.N per process "
        "with --processes); what is measured then includes the profiler's own cost",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.client_processes is None:
        args.client_processes = args.processes
    if args.client_processes < 1:
        parser.error("--client-processes must be at least 1")
    if args.processes > 1 and not (
        os.environ.get("REDIS_URL") and os.environ.get("DATABASE_URL", "").startswith("postgres")
    ):
        parser.error("--processes above 1 needs DATABASE_URL (PostgreSQL) and REDIS_URL")
    database = _django.setup()
    machine_ms = reference_ms()  # before anything else runs: the machine's own speed today
    model, model_port = model_server(args.chunks, args.chunk_delay, api=args.api)
    base_url = f"http://127.0.0.1:{model_port}/v1"
    provider = OPENAI_PROVIDERS.get(args.api)
    openai_row = {"provider": provider, "model": "bench-model", "base_url": base_url} if provider else None
    try:
        pairs = prepare(args.conversations, openai_row)
        servers, port = serve_product(model_port, args.server, args.ws, args.processes, args.profile)
    except BaseException:
        model.kill()
        model.wait()
        raise
    try:
        # The clients are the measuring instrument: a collector pause in this
        # process would be counted as relay latency. A full collection of the
        # Django heap prepare() loaded took 60-80 ms, and even with that heap
        # frozen a collection of the 200 connections' objects took 17-29 ms
        # (2026-12-01). The run is short and its garbage small: no collections
        # while it runs.
        gc.collect()
        gc.freeze()
        gc.disable()
        started, cpu_before = time.monotonic(), [cpu_seconds(server.pid) for server in servers]
        model_cpu_before, client_cpu_before = cpu_seconds(model.pid), cpu_seconds(os.getpid())
        try:
            if args.client_processes > 1:
                completed, failures, samples, client_cpu, client_rss = clients_in_processes(
                    port, pairs, args.chunks, args.client_processes
                )
            else:
                completed, failures, samples = asyncio.run(run_clients(port, pairs, args.chunks))
                client_cpu = cpu_seconds(os.getpid()) - client_cpu_before
                client_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        finally:
            gc.enable()
        elapsed = time.monotonic() - started
        cpu_each = [cpu_seconds(server.pid) - before for server, before in zip(servers, cpu_before, strict=True)]
        server_cpu = sum(cpu_each)
        model_cpu = cpu_seconds(model.pid) - model_cpu_before
        server_rss = [peak_rss_mb(server.pid) for server in servers]
    finally:
        for process in (*servers, model):
            process.terminate()
            process.wait(timeout=30)
    latencies, first_chunks = sorted(samples.latencies), sorted(samples.first_chunks)
    results = {
        "conversations": args.conversations,
        "chunks_per_answer": args.chunks,
        "server": args.server if args.processes == 1 else f"eunice.serve x {args.processes}",
        "server_processes": args.processes,
        "model_api": args.api,
        "channel_layer": "redis" if os.environ.get("REDIS_URL") else "in-memory",
        "database": database,
        "completed": completed,
        "failed": sum(failures.values()),
        "failures": dict(failures.most_common()),
        # Deltas that arrive while a socket is behind go out merged, so a
        # message may carry several chunks; latency is per message.
        "messages_relayed": len(latencies),
        "relay_p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "relay_p99_ms": percentile(latencies, 0.99),
        # From sending the message to the answer's first chunk: the turn's
        # set-up, the tool call and both model calls, all 200 starting at once.
        "first_chunk_p50_ms": round(statistics.median(first_chunks), 1) if first_chunks else None,
        "first_chunk_p99_ms": percentile(first_chunks, 0.99),
        "seconds": round(elapsed, 1),
        # The server's CPU time over the run per chunk relayed: its whole cost per
        # chunk (turn set-up and the tool call amortised over the answer).
        "server_cpu_us_per_chunk": round(server_cpu / (args.conversations * args.chunks) * 1e6, 1),
        "server_cpu_percent": round(100 * server_cpu / elapsed, 1),
        # Per process: how evenly the kernel spread the conversations, and what one process
        # costs at this load (a bigger machine needs a core per ~100 % here).
        "server_cpu_percent_each": [round(100 * cpu / elapsed, 1) for cpu in cpu_each],
        # The other two processes share the machine's cores with the server:
        # when they are busy, latency grows for reasons that are not the server's.
        "clients_cpu_percent": round(100 * client_cpu / elapsed, 1),
        "model_server_cpu_percent": round(100 * model_cpu / elapsed, 1),
        "server_peak_rss_mb": round(max(server_rss), 1),
        "server_peak_rss_mb_each": [round(rss, 1) for rss in server_rss],
        "client_processes": args.client_processes,
        "client_peak_rss_mb": round(client_rss, 1),
        # Fixed pure-Python work timed before the run (bench/_machine.py): lower is faster.
        "machine_reference_ms": machine_ms,
    }
    rows = per_second(samples) if args.per_second else None
    if rows is not None and args.json:
        results["per_second"] = rows
    _django.print_results(results, args.json)
    if rows is not None and not args.json:
        print(f"\n{'second':>6} {'messages':>8} {'p99 ms':>8} {'max ms':>8} {'over ' + str(TARGET_MS) + ' ms':>11}")
        for row in rows:
            over = row[f"over_{TARGET_MS}_ms"]
            print(f"{row['second']:>6} {row['messages']:>8} {row['p99_ms']:>8} {row['max_ms']:>8} {over:>11}")


if __name__ == "__main__":
    main()

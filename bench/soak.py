"""Soak: N conversations over M minutes against the real server, with faults injected at random.

Starts the product as scripts/run does (``python -m eunice.serve``, no job cluster) on a
throwaway SQLite database (or DATABASE_URL), the bench model server (bench/_model_server.py:
each turn calls `plan`, then streams an answer), and N websocket clients. Each client
sends messages one after another until the time is up, each message text unique. Every
``--fault-every`` seconds (on average) one fault is chosen at random:

- ``sigkill``: the server is SIGKILLed and started again (its turns are lost mid-way);
- ``sigterm``: the server is stopped as systemd does and started again (a drain);
- ``drop``: a few clients drop their socket in the middle of a turn;
- ``malformed``: a few clients send a malformed frame.

Prints turns completed (the answer arrived and the turn ended), turns interrupted
(the socket closed or the server stopped mid-turn), messages lost (a message whose
turn the server began, or an answer the client received in full, with no row in the
database: goal 0), execution-log rows lost against the tool calls the clients saw
answered (goal 0 outside the documented window: rows buffered in the second before a
SIGKILL, registry/execlog.py), and the server's peak RSS with its growth after warm-up
(goal: flat).

Usage: python bench/soak.py [--conversations 200] [--minutes 5] [--fault-every 30]
       [--faults sigkill,sigterm,drop,malformed] [--rotate 1] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import _django
from turns import listening_socket, model_server, peak_rss_mb, prepare, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
MAX_CONVERSATIONS = 1000
MAX_MINUTES = 60
FLUSH_SECONDS = 1.0  # EUNICE_LOG_FLUSH_SECONDS: the window a SIGKILL may lose log rows from
WARM_UP_SECONDS = 30.0  # RSS growth is measured from this long into a server process's life
CHUNKS = 20
FAULTS = ("sigkill", "sigterm", "drop", "malformed")
SETTLE_SECONDS = 1.5  # a socket quiet this long after a (re)connect carries no earlier turn's frames


@dataclass
class Tally:
    completed: int = 0
    interrupted: int = 0
    refused: int = 0  # answered with an error event (server stopping, too many runs, ...)
    begun: dict[str, str] = field(default_factory=dict)  # message text -> conversation, its turn began
    answered: dict[str, str] = field(default_factory=dict)  # message text -> the full answer received
    calls: Counter = field(default_factory=Counter)  # conversation -> tool results seen
    call_times: list[tuple[str, float]] = field(default_factory=list)  # (conversation, when)
    kills: list[float] = field(default_factory=list)  # when the server was SIGKILLed
    faults: Counter = field(default_factory=Counter)


class Product:
    """The server process, started again after each stop."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.samples: list[tuple[int, float, float]] = []  # (pid, age s, RSS MB)
        self.peak_mb = 0.0
        self.started_at = 0.0
        self.serving = False  # the current process listens: its age (and RSS samples) count from then

    def start(self) -> None:
        # Not sampled while it starts: its age would be counted from the previous process's
        # start, and its start-up heap (imports, 60 -> 260 MB) read as growth after warm-up.
        self.serving = False
        listener = listening_socket()
        self.port = listener.getsockname()[1]
        listener.close()  # eunice.serve binds its own port; a race with another process is unlikely on loopback
        self.process = subprocess.Popen(
            [sys.executable, "-m", "eunice.serve"],
            cwd=ROOT,
            env={**self.env, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.process, timeout=180, path="/health/")
        self.started_at = time.monotonic()
        self.serving = True

    def sample(self) -> None:
        if not self.serving or self.process is None or self.process.poll() is not None:
            return
        try:
            rss = _rss_mb(self.process.pid)
            self.peak_mb = max(self.peak_mb, peak_rss_mb(self.process.pid))
        except OSError:
            return
        self.samples.append((self.process.pid, time.monotonic() - self.started_at, rss))

    def kill(self, sig: int) -> None:
        assert self.process is not None
        self.sample()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill(signal.SIGTERM)

    def series(self, every: float = 30.0) -> list[tuple[float, float]]:
        """The longest-lived server process's RSS (MB) about every ``every`` seconds of its life."""
        by_pid: dict[int, list[tuple[float, float]]] = {}
        for pid, age, rss in self.samples:
            by_pid.setdefault(pid, []).append((age, rss))
        if not by_pid:
            return []
        points = max(by_pid.values(), key=lambda p: p[-1][0] - p[0][0])
        picked, next_at = [], 0.0
        for age, rss in points:
            if age >= next_at:
                picked.append((round(age), round(rss, 1)))
                next_at = age + every
        return picked

    def growth(self) -> dict:
        """RSS after warm-up and at the end of the longest-lived server process, and how long it was watched."""
        by_pid: dict[int, list[tuple[float, float]]] = {}
        for pid, age, rss in self.samples:
            by_pid.setdefault(pid, []).append((age, rss))
        best = {"rss_after_warm_up_mb": None, "rss_at_end_mb": None, "rss_watched_seconds": 0.0}
        for points in by_pid.values():
            warm = [(age, rss) for age, rss in points if age >= WARM_UP_SECONDS]
            if len(warm) >= 2 and warm[-1][0] - warm[0][0] > best["rss_watched_seconds"]:
                best = {
                    "rss_after_warm_up_mb": round(warm[0][1], 1),
                    "rss_at_end_mb": round(warm[-1][1], 1),
                    "rss_watched_seconds": round(warm[-1][0] - warm[0][0], 1),
                }
        return best


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def converse(product: Product, pairs: list[tuple[str, str]], deadline: float, tally: Tally, sabotage: dict):
    """Send messages one after another until the deadline; reconnect after any close. With
    several conversations (``--rotate``) one message goes to each in turn, a socket each."""
    import websockets

    number = 0
    index = 0
    while time.monotonic() < deadline:
        conversation_id, cookie = pairs[index % len(pairs)]
        url = f"ws://127.0.0.1:{product.port}/ws/conversations/{conversation_id}/"
        headers = {"Cookie": cookie, "Origin": f"http://127.0.0.1:{product.port}"}
        try:
            async with websockets.connect(url, additional_headers=headers, open_timeout=10, max_size=None) as ws:
                await settle(ws)
                while time.monotonic() < deadline:
                    number += 1
                    text = f"soak {conversation_id} {number}"
                    await turn(ws, conversation_id, text, tally, sabotage)
                    if len(pairs) > 1:
                        index += 1
                        break
        except (TimeoutError, OSError, websockets.exceptions.WebSocketException):
            await asyncio.sleep(0.5 + random.random())  # the server is restarting


async def settle(ws) -> None:  # noqa: ANN001
    """After a (re)connect: read what is still streaming to the conversation (a turn begun
    before the socket closed goes on in the server) until the socket is quiet.

    Frames carry no message of their own: without this, the end of that earlier turn
    was read as the answer to the next message sent, which the server had refused
    (its conversation still busy), and the bench counted a message lost that the
    server had never taken (bench/HISTORY.md, 2026-12-02)."""
    while True:
        try:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=SETTLE_SECONDS))
        except TimeoutError:
            return
        if frame.get("type") == "done":
            continue  # the earlier turn ended; anything after it is read the same way


async def turn(ws, conversation_id: str, text: str, tally: Tally, sabotage: dict) -> None:  # noqa: ANN001
    if sabotage.pop(conversation_id, None) == "malformed":
        await ws.send('{"type": "message", "text": ')  # answered with an error, the socket stays
        await asyncio.wait_for(ws.recv(), timeout=30)
    await ws.send(json.dumps({"type": "message", "text": text}))
    answer: list[str] = []
    began = False
    try:
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
            kind = frame.get("type")
            if not began and kind in ("text_delta", "tool_call", "tool_result", "progress"):
                began = True
                tally.begun[text] = conversation_id
            if kind == "tool_result":
                tally.calls[conversation_id] += 1
                tally.call_times.append((conversation_id, time.time()))
            elif kind == "text_delta":
                answer.append(frame["text"])
                if sabotage.pop(conversation_id, None) == "drop":
                    await ws.close()  # mid-turn: the turn goes on in the server
                    tally.interrupted += 1
                    raise ConnectionAbortedError
            elif kind == "error":
                # Refused (a turn still running, the server stopping): nothing of the message
                # is stored, and the client was told. Frames seen before it were another
                # turn's, still streaming to this conversation after a reconnect.
                tally.begun.pop(text, None)
                tally.refused += 1
                await asyncio.sleep(1.0)
                return
            elif kind == "done":
                if frame.get("cancelled"):
                    tally.interrupted += 1
                else:
                    tally.completed += 1
                    tally.answered[text] = "".join(answer)
                return
    except ConnectionAbortedError:
        raise OSError("dropped on purpose") from None
    except Exception:
        tally.interrupted += 1
        raise


async def inject(
    product: Product, pairs, deadline: float, every: float, tally: Tally, sabotage: dict, kinds: tuple[str, ...]
) -> None:
    while kinds:
        pause = random.expovariate(1 / every)
        if time.monotonic() + pause >= deadline - 5:
            return
        await asyncio.sleep(pause)
        fault = random.choice(kinds)
        tally.faults[fault] += 1
        if fault in ("sigkill", "sigterm"):
            if fault == "sigkill":
                tally.kills.append(time.time())
            await asyncio.to_thread(product.kill, signal.SIGKILL if fault == "sigkill" else signal.SIGTERM)
            await asyncio.to_thread(product.start)
        else:
            for conversation_id, _ in random.sample(pairs, min(5, len(pairs))):
                sabotage[conversation_id] = fault


async def watch(product: Product, deadline: float) -> None:
    while time.monotonic() < deadline:
        product.sample()
        await asyncio.sleep(2.0)


async def soak(
    product: Product, pairs, conversations: int, minutes: float, every: float, tally: Tally, kinds: tuple[str, ...]
) -> None:
    deadline = time.monotonic() + minutes * 60
    sabotage: dict[str, str] = {}
    clients = [converse(product, pairs[n::conversations], deadline, tally, sabotage) for n in range(conversations)]
    await asyncio.gather(
        inject(product, pairs, deadline, every, tally, sabotage, kinds), watch(product, deadline), *clients
    )


def losses(tally: Tally) -> dict:
    """What the database lacks of what the clients saw."""
    from django.db.models import Count

    from conversations.models import ChatMessage
    from registry.models import ToolExecutionLog

    users = set(ChatMessage.objects.filter(role="user", text__startswith="soak ").values_list("text", flat=True))
    answers = Counter(ChatMessage.objects.filter(role="assistant").values_list("conversation_id", flat=True).iterator())
    answered_by = Counter(c for t, c in tally.begun.items() if t in tally.answered)
    lost_messages = sum(1 for text in tally.begun if text not in users)
    lost_answers = sum(max(0, n - answers.get(c, 0)) for c, n in answered_by.items())
    rows = dict(
        ToolExecutionLog.objects.filter(tool_name="plan")
        .values_list("conversation_id")
        .annotate(n=Count("id"))
        .values_list("conversation_id", "n")
    )
    missing = {c: n - rows.get(c, 0) for c, n in tally.calls.items() if n > rows.get(c, 0)}
    in_window = Counter(
        c for c, when in tally.call_times if any(0 <= kill - when <= FLUSH_SECONDS + 1.0 for kill in tally.kills)
    )
    outside = sum(max(0, n - in_window.get(c, 0)) for c, n in missing.items())
    return {
        "messages_lost": lost_messages + lost_answers,
        "log_rows_lost": sum(missing.values()),
        "log_rows_lost_outside_window": outside,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200, help=f"at most {MAX_CONVERSATIONS}")
    parser.add_argument("--minutes", type=float, default=5.0, help=f"at most {MAX_MINUTES}")
    parser.add_argument("--fault-every", type=float, default=30.0, help="mean seconds between faults")
    parser.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"the faults to choose from, comma-separated ({', '.join(FAULTS)}; 'none': no fault). "
        "Without sigkill and sigterm one server process lives the whole run: its RSS over time tells "
        "a leak from warm-up",
    )
    parser.add_argument(
        "--rotate",
        type=int,
        default=1,
        help="conversations per client, one message to each in turn (short histories; default 1)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    kinds = tuple(k for k in args.faults.split(",") if k and k != "none")
    if set(kinds) - set(FAULTS):
        parser.error(f"--faults: choose from {', '.join(FAULTS)} or 'none'")
    if not (1 <= args.conversations <= MAX_CONVERSATIONS and 0 < args.minutes <= MAX_MINUTES):
        parser.error(f"--conversations 1..{MAX_CONVERSATIONS}, --minutes up to {MAX_MINUTES}")
    if not 1 <= args.rotate <= MAX_CONVERSATIONS // args.conversations:
        most = MAX_CONVERSATIONS // args.conversations
        parser.error(f"--rotate: 1..{most} (at most {MAX_CONVERSATIONS} conversations in all)")
    random.seed(args.seed)
    database = _django.setup()
    model, model_port = model_server(CHUNKS, 0.01)
    pairs = prepare(args.conversations * args.rotate)
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "bench-key",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}",
        "EUNICE_LLM_MAX_RETRIES": "0",
        "EUNICE_LOG_FLUSH_SECONDS": str(FLUSH_SECONDS),
        "EUNICE_JOBS": "0",
        "EUNICE_PRELOAD_TOOL_SEARCH": "0",
        "EUNICE_PRELOAD_SANDBOX": "0",
        "EUNICE_SHUTDOWN_GRACE_SECONDS": "5",
        "EUNICE_TURN_RATE": os.environ.get("EUNICE_TURN_RATE", "100000/min"),  # the soak is not a rate test
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "UVICORN_LOG_LEVEL": "warning",
    }
    product = Product(env)
    tally = Tally()
    started = time.monotonic()
    try:
        product.start()
        asyncio.run(soak(product, pairs, args.conversations, args.minutes, args.fault_every, tally, kinds))
    finally:
        product.stop()
        model.terminate()
        model.wait(timeout=30)
    results = {
        "conversations": args.conversations,
        "rotate": args.rotate,
        "minutes": args.minutes,
        "database": database,
        "faults": dict(tally.faults),
        "turns_completed": tally.completed,
        "turns_interrupted": tally.interrupted,
        "turns_refused": tally.refused,
        **losses(tally),
        "tool_calls_seen": sum(tally.calls.values()),
        "server_peak_rss_mb": round(product.peak_mb, 1),
        **product.growth(),
        "rss_every_30s_mb": product.series(),
        "seconds": round(time.monotonic() - started, 1),
    }
    _django.print_results(results, args.json)


if __name__ == "__main__":
    main()

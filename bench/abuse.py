"""Hostile inputs against a running server: each must be refused or answered within 5 s and
grow the server's memory by at most 200 MB.

Starts the product (uvicorn with the flags scripts/run uses, the real ASGI app) in a
subprocess on a throwaway SQLite database and files directory, logs in as a plain user of
a tenant, and sends, one at a time: a CSV of 10^5 and of 10^6 columns, a CSV of 20 million
rows, a JSON record of 10^6 keys, an xlsx holding a 420 MB sheet, an xlsx whose one cell
lies at XFD1048576, a Parquet file whose dictionary decodes to 2 GB, a DOCX holding a
730 MB document and a PDF whose stream inflates to 1 GB (both through index_content),
JSON nested 100,000 deep in a REST body, 30,000 deep in a websocket frame and 15,000 deep
in a tool's arguments; then an ordinary message, which must still be answered.

Per case it prints the HTTP status (or the websocket's answer), what the server said, the
seconds it took and the server's RSS growth during it (VmRSS sampled every 10 ms, against
its RSS just before); at the end the server's VmHWM against its RSS after start-up.

With ``--url`` it uses a server already running instead (``--token`` of a tenant user,
``--conversation`` of theirs; ``--pid`` to measure its memory).

Usage: python bench/abuse.py [--json] [--url URL --token TOKEN --conversation ID [--pid PID]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _django
from turns import listening_socket, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS, GOAL_MB = 5.0, 200.0
MB = 1 << 20


@dataclass
class Target:
    url: str
    token: str
    conversation: str
    cookie: str = ""
    pid: int | None = None


def rss_mb(pid: int | None, field: str = "VmRSS") -> float:
    if pid is None:
        return 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


class PeakSampler:
    """The highest VmRSS of ``pid`` while the block runs, sampled every 10 ms."""

    def __init__(self, pid: int | None) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()

    def __enter__(self) -> PeakSampler:
        self.before = self.peak = rss_mb(self.pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, rss_mb(self.pid))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=1)
        self.peak = max(self.peak, rss_mb(self.pid))


def request(target: Target, method: str, path: str, body: bytes = b"", content_type: str = "") -> tuple[int, str]:
    headers = {"Authorization": f"Token {target.token}"}
    if content_type:
        headers["Content-Type"] = content_type
    call = urllib.request.Request(f"{target.url}{path}", data=body or None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(call, timeout=300) as response:  # noqa: S310 - the bench's own server
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def multipart(target: Target, path: str, filename: str, payload: bytes) -> tuple[int, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + payload
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return request(target, "POST", path, body, f"multipart/form-data; boundary={boundary}")


def upload_dataset(filename: str, payload: bytes) -> Callable[[Target], tuple[int, str]]:
    return lambda target: multipart(target, f"/api/conversations/{target.conversation}/datasets/", filename, payload)


def say(text: str) -> Callable[[Target], tuple[int, str]]:
    def send(target: Target) -> tuple[int, str]:
        body = json.dumps({"text": text}).encode()
        return request(target, "POST", f"/api/conversations/{target.conversation}/messages/", body, "application/json")

    return send


def raw_message_body(body: str) -> Callable[[Target], tuple[int, str]]:
    return lambda target: request(
        target, "POST", f"/api/conversations/{target.conversation}/messages/", body.encode(), "application/json"
    )


def index_document(filename: str, payload: bytes) -> Callable[[Target], tuple[int, str]]:
    """Upload a document, then ask index_content for it (a slash command: the offline model)."""

    def send(target: Target) -> tuple[int, str]:
        status, answer = multipart(target, "/api/documents/", filename, payload)
        if status != 201:
            return status, answer
        return say(f'/index_content {{"corpus": "abuse", "items": [{{"upload": "{filename}"}}]}}')(target)

    return send


def websocket_frame(frame: str) -> Callable[[Target], tuple[int, str]]:
    def send(target: Target) -> tuple[int, str]:
        import websockets

        async def talk() -> str:
            url = target.url.replace("http", "ws", 1) + f"/ws/conversations/{target.conversation}/"
            headers = {"Cookie": target.cookie, "Origin": target.url}
            async with websockets.connect(url, additional_headers=headers, open_timeout=30) as ws:
                await ws.send(frame)
                return await asyncio.wait_for(ws.recv(), timeout=60)

        try:
            return 101, asyncio.run(talk())
        except Exception as error:  # noqa: BLE001 - a closed socket is an answer too; report it
            return 0, f"{type(error).__name__}: {error}"

    return send


def cases() -> list[tuple[str, Callable[[], Callable[[Target], tuple[int, str]]]]]:
    """(name, maker) pairs; each maker builds its hostile input when the case runs."""
    sys.path.insert(0, str(ROOT))
    from tests import hostile_files as hostile

    def nested(depth: int) -> str:
        return "[" * depth + "]" * depth

    def far_cell_workbook() -> bytes:
        import io

        import openpyxl

        book = openpyxl.Workbook()
        book.active["A1"], book.active["XFD1048576"] = "a", 1
        buffer = io.BytesIO()
        book.save(buffer)
        return buffer.getvalue()

    return [
        ("csv, 10^5 columns", lambda: upload_dataset("wide.csv", hostile.csv_table(1, 100_000))),
        ("csv, 10^6 columns", lambda: upload_dataset("wider.csv", hostile.csv_table(1, 1_000_000))),
        ("csv, 2*10^7 rows", lambda: upload_dataset("long.csv", b"a\n" + b"1\n" * 20_000_000)),
        (
            "json, 10^6 keys",
            lambda: upload_dataset("wide.json", json.dumps([{f"k{n}": 1 for n in range(1_000_000)}]).encode()),
        ),
        ("xlsx, 420 MB sheet", lambda: upload_dataset("bomb.xlsx", hostile.office_bomb("xlsx", 420 * MB))),
        ("xlsx, cell XFD1048576", lambda: upload_dataset("far.xlsx", far_cell_workbook())),
        (
            "parquet, 2 GB dictionary",
            lambda: upload_dataset("bomb.parquet", hostile.parquet_dictionary_bomb(20_000, 100_000)),
        ),
        ("docx, 730 MB document", lambda: index_document("bomb.docx", hostile.office_bomb("docx", 730 * MB))),
        ("pdf, 1 GB stream", lambda: index_document("bomb.pdf", hostile.pdf_stream_bomb(1024 * MB))),
        ("rest body, depth 10^5", lambda: raw_message_body(f'{{"text": {nested(100_000)}}}')),
        ("ws frame, depth 3*10^4", lambda: websocket_frame(f'{{"type": "message", "text": {nested(30_000)}}}')),
        ("tool args, depth 15000", lambda: say(f'/search_tools {{"query": {nested(15_000)}}}')),
        ("then an ordinary message", lambda: say('/search_tools {"query": "make a plan"}')),
    ]


def run_case(target: Target, name: str, maker: Callable[[], Callable[[Target], tuple[int, str]]]) -> dict:
    send = maker()  # built before timing: the input's own cost is not the server's
    with PeakSampler(target.pid) as memory:
        started = time.monotonic()
        status, answer = send(target)
        seconds = time.monotonic() - started
    said = _said(answer)
    growth = round(memory.peak - memory.before, 1)
    ok = seconds <= GOAL_SECONDS and growth <= GOAL_MB and status != 500 and status != 0
    return {
        "case": name,
        "status": status,
        "seconds": round(seconds, 2),
        "rss_growth_mb": growth,
        "within_goal": ok,
        "answer": said,
    }


def _said(answer: str) -> str:
    return " ".join(_text(answer).split())[:160]


def _text(answer: str) -> str:
    try:
        body = json.loads(answer)
    except ValueError:
        return answer
    if isinstance(body, dict):
        found = body.get("error") or body.get("detail") or body.get("message", {})
        text = found.get("text", "") if isinstance(found, dict) else found
        return str(text or body)
    return str(body)


def prepare_user() -> tuple[str, str, str]:
    """A plain user of tenant 'abuse' with a conversation and a corpus: (token, conversation id, session cookie)."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from conversations.models import Conversation
    from registry.models import TenantMembership

    user = get_user_model().objects.create_user("abuser", password=uuid.uuid4().hex)
    TenantMembership.objects.create(user=user, tenant_id="abuse")
    conversation = Conversation.objects.create(tenant_id="abuse", user=user, title="abuse")
    client = Client()
    client.force_login(user)
    return Token.objects.create(user=user).key, str(conversation.pk), f"sessionid={client.cookies['sessionid'].value}"


def start_server(files_dir: str) -> tuple[subprocess.Popen, int]:
    listener = listening_socket()
    fd, port = listener.fileno(), listener.getsockname()[1]
    env = {
        **os.environ,
        "EUNICE_FILES_DIR": files_dir,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ANTHROPIC_API_KEY": "",
        "EUNICE_DEFAULT_MODEL": "offline",
    }
    command = [
        "-m",
        "uvicorn",
        "--fd",
        str(fd),
        "--log-level",
        "warning",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--ws",
        "websockets",
        "--ws-per-message-deflate",
        "false",
        "--ws-max-size",
        "1048576",
        "--lifespan",
        "off",
        "eunice.asgi:application",
    ]
    server = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(fd,),
    )
    listener.close()
    wait_for_port(port, server, path="/health/")
    return server, port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server instead of starting one")
    parser.add_argument("--token", help="with --url: a tenant user's API token")
    parser.add_argument("--conversation", help="with --url: a conversation of that user")
    parser.add_argument("--cookie", default="", help="with --url: that user's session cookie (for the websocket case)")
    parser.add_argument("--pid", type=int, help="with --url: the server's process id, to measure its memory")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = None
    if args.url:
        if not (args.token and args.conversation):
            parser.error("--url needs --token and --conversation")
        target = Target(args.url.rstrip("/"), args.token, args.conversation, args.cookie, args.pid)
    else:
        _django.setup()
        token, conversation, cookie = prepare_user()
        server, port = start_server(tempfile.mkdtemp(prefix="eunice-abuse-files-"))
        target = Target(f"http://127.0.0.1:{port}", token, conversation, cookie, server.pid)
    try:
        say('/create_corpus {"name": "abuse"}')(target)
        say('/search_tools {"query": "warm up"}')(target)  # the first search loads its index
        baseline = rss_mb(target.pid)
        rows = [run_case(target, name, maker) for name, maker in cases()]
        peak = rss_mb(target.pid, "VmHWM")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    summary = {
        "cases": len(rows),
        "within_goal": sum(r["within_goal"] for r in rows),
        "server_rss_after_start_mb": round(baseline, 1),
        "server_peak_rss_mb": round(peak, 1),
        "goal": f"every case answered within {GOAL_SECONDS:g} s, RSS growth <= {GOAL_MB:g} MB",
    }
    if args.json:
        print(json.dumps({"results": rows, **summary}))
        return
    print(f"{'case':<26} {'status':>6} {'seconds':>8} {'+RSS MB':>8} {'ok':>3}  answer")
    for row in rows:
        print(
            f"{row['case']:<26} {row['status']:>6} {row['seconds']:>8.2f} {row['rss_growth_mb']:>8.1f} "
            f"{'yes' if row['within_goal'] else 'NO':>3}  {row['answer']}"
        )
    for key, value in summary.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()

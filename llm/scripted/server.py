"""ScriptedMessagesServer: POST /v1/messages over real HTTP, answered from a script."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llm.scripted.checks import blocks, context_problem, expectation_misses, protocol_problems
from llm.scripted.render import LAST_CHUNK, http_chunk, message_json, sse, stream_events
from llm.scripted.script import ScriptError, Turn, load_script

logger = logging.getLogger("eunice.llm.scripted")

# Bounds: a paused stream waits at most this long for resume(); stop() waits
# at most this long for the serving thread.
RESUME_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    connection: int = 0  # which TCP connection it came on (1, 2, ...): shows keep-alive reuse

    @property
    def api_key(self) -> str:
        return sent_key(self.headers)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def system(self) -> list[dict[str, Any]]:
        return blocks(self.body.get("system"))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    def cache_marked(self) -> list[dict[str, Any]]:
        """Every system or message block that carries cache_control, in prompt order."""
        found = [b for b in self.system if "cache_control" in b]
        for message in self.messages:
            found += [b for b in blocks(message.get("content")) if "cache_control" in b]
        return found


class ScriptedMessagesServer:
    """Replays ``turns`` (one per request) on 127.0.0.1; records every request.

    Like the real API it speaks HTTP/1.1 and keeps connections open between
    requests (streams use chunked transfer encoding), so a client that closes
    or abandons its connections shows up in ``connections``.

    With ``api_key`` set, a request carrying another x-api-key gets a 401.
    With ``max_requests`` set, ``wait_until_done`` returns after that many.
    More requests than turns get a 500 and a recorded failure: never a loop.
    With ``context_tokens`` set, the server counts a request's tokens as its
    JSON size over ``chars_per_token`` (real ratios for JSON and code are 2–3),
    refuses one past the window with the API's 400 "prompt is too long" (no
    turn is used), and reports the count as ``input_tokens`` where the turn
    does not script it.
    """

    def __init__(
        self,
        turns: Sequence[Turn | dict[str, Any]],
        *,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_requests: int | None = None,
        context_tokens: int | None = None,
        chars_per_token: float = 2.5,
    ) -> None:
        self.turns = load_script(list(turns))
        self.context_tokens = context_tokens
        self.chars_per_token = chars_per_token
        self.api_key = api_key
        self.max_requests = max_requests
        self.requests: list[RecordedRequest] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._next_turn = 0
        self.connections = 0  # TCP connections accepted so far
        self._resume = threading.Event()
        self._done = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedMessagesServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._resume.set()  # never leave a paused stream hanging
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(STOP_TIMEOUT_SECONDS)
        self._httpd.server_close()

    def __enter__(self) -> ScriptedMessagesServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def resume(self) -> None:
        """Let a stream paused by a turn's ``pause_after`` go on."""
        self._resume.set()

    def script(self, turns: Sequence[Turn | dict[str, Any]]) -> ScriptedMessagesServer:
        """Start over with ``turns``: for one server shared by several tests (one process
        calling it for a whole test module). Requests, failures and the pause are reset."""
        loaded = load_script(list(turns))
        with self._lock:
            self.turns = loaded
            self._next_turn = 0
            self.requests = []
            self.failures = []
            self._resume.clear()
            self._done.clear()
        return self

    def wait_until_done(self, timeout: float | None = None) -> bool:
        """True once ``max_requests`` requests were answered (bounded by ``timeout``)."""
        return self._done.wait(timeout)

    @property
    def turns_left(self) -> int:
        return len(self.turns) - self._next_turn

    # --- called by the handler thread ------------------------------------

    def connected(self) -> int:
        """Count a new connection; its number."""
        with self._lock:
            self.connections += 1
            return self.connections

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def take_turn(self) -> tuple[int, Turn | None]:
        """The next turn and its index; None (and a failure) once the script is used up."""
        with self._lock:
            if self._next_turn >= len(self.turns):
                self.failures.append(
                    f"request {len(self.requests)} arrived after all {len(self.turns)} turns were used"
                )
                return self._next_turn, None
            self._next_turn += 1
            return self._next_turn - 1, self.turns[self._next_turn - 1]

    def answered(self) -> None:
        with self._lock:
            if self.max_requests is not None and len(self.requests) >= self.max_requests:
                self._done.set()

    def fail(self, message: str) -> None:
        with self._lock:
            self.failures.append(message)

    def wait_for_resume(self) -> None:
        if not self._resume.wait(RESUME_TIMEOUT_SECONDS):
            self.fail(f"a paused stream was not resumed within {RESUME_TIMEOUT_SECONDS} s")

    # --- the wire protocol: what a server for another API replaces --------

    path = "/v1/messages"
    id_prefix = "msg_scripted_"

    def problems(self, body: dict[str, Any]) -> list[str]:
        """The API's rules ``body`` breaks."""
        return protocol_problems(body)

    def misses(self, turn: Turn, body: dict[str, Any]) -> list[str]:
        return expectation_misses(turn.expect, body)

    def error_body(self, error: ScriptError, api_key: str) -> dict[str, Any]:
        # `{api_key}` in a scripted message echoes the key back, to prove clients redact it.
        body = error.body(api_key=api_key) if "{api_key}" in error.message else error.body()
        return {**body, "request_id": "req_scripted"}

    def answer(self, turn: Turn, body: dict[str, Any], message_id: str) -> dict[str, Any]:
        return message_json(turn, model=str(body.get("model", "")), message_id=message_id)

    def stream_body(self, turn: Turn, body: dict[str, Any], message_id: str) -> list[bytes]:
        """The streamed answer, one SSE event per item."""
        model = str(body.get("model", ""))
        return [sse(name, data) for name, data in stream_events(turn, model=model, message_id=message_id)]


def sent_key(headers: dict[str, str]) -> str:
    """The API key a client sent: ``x-api-key``, or a bearer token (what the SDK sends)."""
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or bearer.removeprefix("Bearer ").strip()


class _Handler(BaseHTTPRequestHandler):
    server_version = "ScriptedMessages/1"
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API

    def setup(self) -> None:
        super().setup()
        self.connection_number = self.server.scripted.connected()  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("scripted server: %s", format % args)

    def do_POST(self) -> None:
        scripted: ScriptedMessagesServer = self.server.scripted  # type: ignore[attr-defined]
        try:
            self._serve(scripted)
        finally:
            scripted.answered()

    def _serve(self, scripted: ScriptedMessagesServer) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._error(ScriptError(400, "invalid_request_error", "The request body is not valid JSON."))
        headers = {name.lower(): value for name, value in self.headers.items()}
        scripted.record(RecordedRequest("POST", self.path, headers, body, self.connection_number))
        if self.path.split("?")[0] != scripted.path:
            return self._error(ScriptError(404, "not_found_error", f"Not found: {self.path}"))
        if scripted.api_key is not None and sent_key(headers) != scripted.api_key:
            return self._error(ScriptError(401, "authentication_error", "invalid x-api-key"))
        problems = scripted.problems(body)
        if problems:
            scripted.fail("; ".join(problems))
            return self._error(ScriptError(400, "invalid_request_error", "; ".join(problems)))
        tokens, too_long = context_problem(body, scripted.context_tokens, scripted.chars_per_token)
        if too_long:
            return self._error(ScriptError(400, "invalid_request_error", too_long))
        number, turn = scripted.take_turn()
        if turn is not None and scripted.context_tokens is not None and "input_tokens" not in turn.usage:
            turn = replace(turn, usage={**turn.usage, "input_tokens": tokens})
        if turn is None:
            return self._error(ScriptError(500, "api_error", "The scripted server has no turn left."))
        misses = scripted.misses(turn, body)
        if misses:
            scripted.fail(f"turn {number + 1}: " + "; ".join(misses))
            return self._error(
                ScriptError(400, "invalid_request_error", "scripted expectation failed: " + "; ".join(misses))
            )
        if turn.error is not None:
            return self._error(turn.error, api_key=sent_key(headers))
        message_id = f"{scripted.id_prefix}{number + 1}"
        if body.get("stream"):
            return self._stream(scripted, turn, scripted.stream_body(turn, body, message_id), message_id)
        self._json(200, scripted.answer(turn, body, message_id))

    def _stream(self, scripted: ScriptedMessagesServer, turn: Turn, events: list[bytes], message_id: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_{message_id}")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for sent, event in enumerate(events):
                if turn.pause_after is not None and sent == turn.pause_after:
                    scripted.wait_for_resume()
                if turn.delay and sent:
                    time.sleep(turn.delay)  # demo pacing, set by the script
                self.wfile.write(http_chunk(event))
                self.wfile.flush()
            self.wfile.write(LAST_CHUNK)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client stopped reading

    def _error(self, error: ScriptError, *, api_key: str = "") -> None:
        scripted: ScriptedMessagesServer = self.server.scripted  # type: ignore[attr-defined]
        self._json(error.status, scripted.error_body(error, api_key), error.headers)

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

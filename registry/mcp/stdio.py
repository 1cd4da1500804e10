"""The stdio transport: an MCP server as a child process, spoken to over its pipes.

Our own rather than the SDK's ``stdio_client`` for four reasons the SDK does
not cover: the child gets a minimal environment (PATH, HOME, LANG and the
server's own variables; none of ours), a stdout line is capped in size, a
line that is not JSON-RPC ends the connection with an error saying so instead
of leaving the pending request to time out, and the last lines the server
wrote on stderr (bounded, with its own secrets blanked) go with the reason it
ended: a server that fails at start-up says why.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import anyio
from anyio.abc import Process

logger = logging.getLogger("eunice.mcp")

MAX_LINE_BYTES = 8 * 1024 * 1024
INHERITED_ENV = ("PATH", "HOME", "LANG")
STOP_GRACE_SECONDS = 2.0
STDERR_LINES = 20  # the tail kept of what the server wrote on stderr
STDERR_CHARS = 1500  # and at most this much of it (last_error holds 2,000)
STDERR_LINE_BYTES = 64 * 1024  # a longer line is cut: the pipe is drained whatever comes
SECRET_MIN_CHARS = 4  # env values shorter than this are too common to blank


class ProtocolViolation(Exception):
    """The server wrote something on stdout that is not a JSON-RPC line."""


@dataclass
class StdioExit:
    """Why the transport ended, filled in when it does, and the server's stderr tail."""

    reason: str = ""
    ended: anyio.Event = field(default_factory=anyio.Event)
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_LINES))
    stderr_closed: anyio.Event = field(default_factory=anyio.Event)
    secrets: tuple[str, ...] = ()

    def end(self, reason: str) -> None:
        if not self.ended.is_set():
            self.reason = reason
            self.ended.set()

    def stderr_tail(self) -> str:
        """The last lines of stderr, at most STDERR_CHARS, with the server's env values blanked."""
        text = "\n".join(self.stderr)
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text if len(text) <= STDERR_CHARS else "…" + text[-STDERR_CHARS:]

    def with_stderr(self, reason: str) -> str:
        tail = self.stderr_tail()
        return f"{reason}; its last stderr lines:\n{tail}" if tail else reason


def child_environment(own: Mapping[str, str] | None) -> dict[str, str]:
    """PATH, HOME and LANG from this process, then the server's own variables."""
    env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
    env.update(own or {})
    return env


@asynccontextmanager
async def stdio_transport(
    command: str, args: Sequence[str], env: Mapping[str, str] | None, status: StdioExit
) -> AsyncIterator[tuple]:
    """Start ``[command, *args]`` (no shell) and yield the SDK's (read, write) streams.

    Raises OSError when the command cannot be started.
    """
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        env=child_environment(env),
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    status.secrets = tuple(
        sorted({v for v in (env or {}).values() if len(v) >= SECRET_MIN_CHARS}, key=len, reverse=True)
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump_stderr, process, status)
        tg.start_soon(_pump_stdout, process, read_writer, status)
        tg.start_soon(_pump_stdin, process, write_reader, status)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                status.end(status.reason or "closed")
            tg.cancel_scope.cancel()


async def _pump_stdout(process: Process, sink, status: StdioExit) -> None:
    import mcp_types
    from mcp.shared.message import SessionMessage

    assert process.stdout is not None
    buffer = b""
    async with sink:
        try:
            async for chunk in process.stdout:
                buffer += chunk
                if len(buffer) > MAX_LINE_BYTES and b"\n" not in buffer:
                    status.end(f"the server wrote a stdout line over {MAX_LINE_BYTES // (1024 * 1024)} MB")
                    return
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    if len(line) > MAX_LINE_BYTES:
                        status.end(f"the server wrote a stdout line over {MAX_LINE_BYTES // (1024 * 1024)} MB")
                        return
                    try:
                        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        status.end(f"the server wrote non-JSON-RPC output on stdout: {_preview(line)}")
                        return
                    await sink.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        # Say why before the stream closes: the session fails its pending requests then.
        await _end_with_exit(process, status, "the server process exited")


async def _end_with_exit(process: Process, status: StdioExit, otherwise: str) -> None:
    """End the transport with why the server went: its exit code and its last stderr
    lines once it has exited (within a second), else ``otherwise``. Both pumps that see
    it go (stdout closed, stdin refused) ask this, so whichever sees it first, the
    reason is the server's own, never the pipe's."""
    with anyio.move_on_after(1.0):
        await process.wait()
        await status.stderr_closed.wait()  # its last words, once it has gone
    code = process.returncode
    status.end(status.with_stderr(f"the server process exited with code {code}" if code is not None else otherwise))


async def _pump_stderr(process: Process, status: StdioExit) -> None:
    """Drain stderr (a full pipe would stall the server), keeping its last lines."""
    assert process.stderr is not None
    partial = b""
    try:
        async for chunk in process.stderr:
            *lines, partial = (partial + chunk).split(b"\n")
            partial = partial[-STDERR_LINE_BYTES:]
            status.stderr.extend(line[:STDERR_LINE_BYTES].decode("utf-8", "replace").rstrip() for line in lines)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        if partial.strip():
            status.stderr.append(partial.decode("utf-8", "replace").rstrip())
        status.stderr_closed.set()


async def _pump_stdin(process: Process, source, status: StdioExit) -> None:
    assert process.stdin is not None
    try:
        async with source:
            async for message in source:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(data.encode() + b"\n")
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        await _end_with_exit(process, status, "the server stopped reading its stdin")


async def _stop(process: Process) -> None:
    with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    with anyio.move_on_after(STOP_GRACE_SECONDS):
        await process.wait()
    if process.returncode is None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, 9)
        with anyio.move_on_after(STOP_GRACE_SECONDS):
            await process.wait()
    with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
        with anyio.move_on_after(STOP_GRACE_SECONDS):
            await process.aclose()


def _preview(line: bytes) -> str:
    text = line[:60].decode("utf-8", "replace")
    return repr(text + ("…" if len(line) > 60 else ""))

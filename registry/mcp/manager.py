"""MCPManager: one long-lived session per server, on a dedicated event loop.

Sync callers (tool handlers, services, commands) bridge into the loop with a
bounded wait. The database is only touched from threads, never on the loop.
In a multi-process deployment each process connects on its own, lazily: the
registry's route step calls ``ensure_connected`` for an MCP tool that has no
handler in this process, which connects from the server's row once, and
backs off after a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import close_old_connections

from registry.context import ToolContext, no_progress
from registry.contract import Err, Hint, Ok
from registry.lazy import Lazy
from registry.mcp import MCPError, inventory, require_sdk
from registry.mcp.breaker import CircuitBreaker
from registry.mcp.config import CONNECT_TIMEOUT, ServerConfig
from registry.mcp.connection import Connection, ConnectionLost, InvalidResult, Progress
from registry.mcp.elicitation import Person
from registry.mcp.naming import RemoteTool, tool_name
from registry.mcp.results import to_envelope
from registry.mcp.transports import MissingEndpoint, transport_of
from registry.models import MCPAuthorization, MCPServer, MCPStatus
from registry.signals import definitions_changed, mcp_tools_changed

logger = logging.getLogger("eunice.mcp")
T = TypeVar("T")

MAX_BACKOFF = 60.0
# A call made while a lost server is reconnected waits this long for it (a process
# restart is ~1 s) rather than failing at once; past it the call is refused in-band.
RECONNECT_WAIT_SECONDS = 10.0


@dataclass
class _Backoff:
    attempts: int = 0
    next_try: float = 0.0
    last_error: str = ""

    def failed(self, error: str) -> None:
        self.attempts += 1
        self.last_error = error
        self.next_try = time.monotonic() + min(MAX_BACKOFF, 2.0 ** (self.attempts - 1))


class CallCancelled(Exception):
    """The caller cancelled while the MCP server was working."""


class _OnLoop:
    """One coroutine run on the MCP loop for a thread that blocks until it ends.

    What ``asyncio.run_coroutine_threadsafe`` does, for half its instructions
    (measured with callgrind): every MCP call crosses threads this way, and the
    hop is most of what the proxy costs over a session used on its own loop.
    No Condition, no chained futures: one lock, released by the task itself the
    moment the coroutine ends (not a loop iteration later, in a done-callback).
    """

    __slots__ = ("_done", "_error", "_loop", "_task", "_value")

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._schedule(loop, coro)

    def _schedule(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
        self._loop = loop
        self._task: asyncio.Task | None = None
        self._error: BaseException | None = None
        self._value: Any = None
        loop.call_soon_threadsafe(self._start, coro)

    def _ended(self) -> None:
        """Called on the MCP loop the moment the coroutine ends: wake the waiter."""
        self._done.release()

    def _start(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._task = self._loop.create_task(self._drive(coro))

    async def _drive(self, coro: Coroutine[Any, Any, Any]) -> None:
        try:
            self._value = await coro
        except Exception as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            self._error = exc
        except BaseException as exc:  # a cancel: handed over too, and the task ends cancelled
            self._error = exc
            raise
        finally:
            self._ended()

    def wait(self, timeout: float) -> bool:
        """True once the coroutine has ended; False after ``timeout`` seconds."""
        return self._done.acquire(timeout=timeout)

    def cancel(self) -> None:
        """Cancel the task (callbacks run in order: after ``_start``, whenever this is called)."""
        self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def outcome(self) -> Any:
        """The coroutine's value, or its exception raised here. Only after ``wait`` said True."""
        if self._error is not None:
            raise self._error
        return self._value


class _AwaitedOnLoop(_OnLoop):
    """One coroutine run on the MCP loop for a coroutine on another event loop (a turn's):
    the one hop there and back a session on another loop costs, with no thread between."""

    __slots__ = ("_caller", "_woken")

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
        self._caller = asyncio.get_running_loop()
        self._woken: asyncio.Future = self._caller.create_future()
        self._schedule(loop, coro)

    def _ended(self) -> None:
        self._caller.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if not self._woken.done():
            self._woken.set_result(None)

    async def result(self, timeout: float) -> Any:
        """The coroutine's value (or its exception), within ``timeout`` seconds; a timeout or
        a cancel of the waiting coroutine cancels it on the MCP loop."""
        try:
            async with asyncio.timeout(timeout):
                await self._woken
        except BaseException:
            self.cancel()
            raise
        return self.outcome()


class MCPManager:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # Keyed by the server row's id: names repeat across tenants, and a new server
        # that reuses a deleted one's name is a different server.
        self._connections: dict[int, Connection] = {}
        # Per-user OAuth servers: each user's own session, keyed by (server id, user id).
        self._user_connections: dict[tuple[int, int], Connection] = {}
        self._breakers: dict[int, CircuitBreaker] = {}
        self._backoff: dict[int, _Backoff] = {}
        self._connected: dict[int, threading.Event] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._lock = threading.RLock()
        self._stopping = False
        self._reconnects: set[asyncio.Task] = set()
        self._synced = threading.Condition()
        self._sync_count: dict[int, int] = {}

    # --- the loop ------------------------------------------------------------

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="mcp-event-loop", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
        return self._loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float, cancelled: Any = None) -> T:
        """Run ``coro`` on the MCP loop and wait. Raises TimeoutError, or CallCancelled
        once ``cancelled()`` says so (checked every 50 ms)."""
        if self._thread is not None and threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("blocking MCP call made on the MCP event loop")
        pending = _OnLoop(self.loop(), coro)
        if cancelled is None:
            finished = pending.wait(timeout)
        else:
            deadline = time.monotonic() + timeout
            while not (finished := pending.wait(min(0.05, max(0.0, deadline - time.monotonic())))):
                if cancelled():
                    # Cancelling the request task makes the SDK send the server
                    # notifications/cancelled: the server stops the work too.
                    pending.cancel()
                    raise CallCancelled
                if time.monotonic() >= deadline:
                    break
        if not finished:
            pending.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s")
        return pending.outcome()

    # --- lifecycle -------------------------------------------------------------

    def connect(self, config: ServerConfig) -> dict:
        """Open the session, list the tools, sync their rows and register handlers.

        Returns {"tools_discovered": N, "tool_names": [...]} (the callable ones).
        Raises MCPError (or UnsafeURL, MCPUnavailable, NameCollision) saying why not.
        """
        require_sdk()
        with self._server_lock(config.id):
            self._close(config.id)
            self._event(config.id).clear()
            try:
                connection = self._open(config)
                try:
                    active = self._adopt(connection, connection.tools)
                except MCPError:
                    self._close(config.id)
                    raise
            except MCPError as exc:
                inventory.mark(config.id, MCPStatus.FAILED, str(exc))
                raise
            inventory.mark(config.id, MCPStatus.CONNECTED)
            self._backoff.pop(config.id, None)
            self._event(config.id).set()
        return {"tools_discovered": len(connection.tools), "tool_names": sorted(active)}

    def disconnect(self, server_id: int) -> int:
        """Close the session and soft-delete the server's rows; returns how many."""
        with self._server_lock(server_id):
            self._close(server_id)
            self.forget_user(server_id)
            retired = inventory.retire(server_id)
            definitions_changed()
            inventory.mark(server_id, MCPStatus.DISCONNECTED)
        return retired

    def reconnect(self, config: ServerConfig) -> dict:
        """Disconnect and connect again (the tool list may have changed)."""
        self.disconnect(config.id)
        return self.connect(config)

    def live_definition(self, server_id: int, tool: str) -> dict | None:
        """The tool's tools/list entry as the connected server reports it now.

        None when the server is not connected here, or no longer lists the tool.
        Raises MCPError when the server does not answer in time.
        """
        connection = self._connections.get(server_id)
        if connection is None or not connection.alive:
            return None
        try:
            tools = self._run(connection.list_now(), CONNECT_TIMEOUT)
        except TimeoutError:
            raise MCPError(f"MCP server {connection.config.name!r} did not list its tools in time") from None
        return next((found.definition for found in tools if found.name == tool), None)

    def stop(self) -> None:
        """Close every session (app shutdown). Rows stay: other processes may use them."""
        self._stopping = True
        if self._loop is not None and self._reconnects:
            try:
                self._run(self._cancel_reconnects(), 20.0)
            except TimeoutError:
                logger.warning("MCP reconnects did not stop within 20 s")
        for name in list(self._connections):
            self._close(name)
        for server_id in {key[0] for key in self._user_connections}:
            self.forget_user(server_id)
        if self._loop is not None:  # the model clients sampling made on this loop close with it
            try:
                self._run(self._loop.shutdown_asyncgens(), 10.0)
            except TimeoutError:
                logger.warning("MCP loop: async generators did not close within 10 s")
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10.0)
            if not thread.is_alive():
                loop.close()
        self._stopping = False

    def is_connected(self, server_id: int) -> bool:
        connection = self._connections.get(server_id)
        return connection is not None and connection.alive

    def wait_connected(self, server_id: int, timeout: float) -> bool:
        """Block until the server is (re)connected, at most ``timeout`` seconds."""
        return self._event(server_id).wait(timeout)

    def sync_count(self, server_id: int) -> int:
        """How many times the server's tool list has been synced into rows in this process."""
        return self._sync_count.get(server_id, 0)

    def wait_synced(self, server_id: int, past: int, timeout: float) -> bool:
        """Block until the tool list has been synced more than ``past`` times (at most ``timeout`` s)."""
        with self._synced:
            return self._synced.wait_for(lambda: self.sync_count(server_id) > past, timeout)

    def ensure_connected(self, server_id: int | str) -> str:
        """Make sure this process has the server's handlers; returns "" or why not.

        ``server_id`` is the row's id (as a string in a tool's implementation).
        Connects from the server's row when needed, once at a time, and not
        again before the backoff after a failure has passed.
        """
        key = int(server_id) if str(server_id).isdigit() else -1
        connection = self._connections.get(key)
        if connection is not None and connection.alive:
            self._register(connection)
            return ""
        if connection is not None:  # its session ended by itself: _reconnect is at work, do not race it
            return f"its MCP server {connection.config.name!r} is reconnecting; try again in a moment"
        backoff = self._backoff.get(key)
        if backoff is not None and time.monotonic() < backoff.next_try:
            wait = backoff.next_try - time.monotonic()
            return f"its MCP server failed to connect ({backoff.last_error}); next try in {wait:.0f} s"
        server = MCPServer.objects.filter(pk=key, enabled=True).first()
        if server is None:
            return "its MCP server is not configured or is disabled"
        try:
            self.connect(ServerConfig.from_model(server))
        except MCPError as exc:
            self._backoff.setdefault(key, _Backoff()).failed(str(exc))
            return f"its MCP server {server.name!r} failed to connect: {exc}"
        return ""

    # --- calls -------------------------------------------------------------------

    def call_tool(
        self,
        server_id: int,
        tool: str,
        arguments: dict,
        cancelled: Any = None,
        progress: Progress | None = None,
        asker: Any = None,
        *,
        user_id: str | int = "",
    ) -> Ok | Hint | Err:
        """tools/call on the server: an envelope, never an exception.

        A call is retried (once, after the server is reconnected) only when the
        connection was lost under it and the tool is listed as idempotent. The
        breaker counts only calls the server failed: a lost connection (and a
        call made while it is re-established) is the reconnect's business.
        ``acall_tool`` is the same call for a coroutine. ``progress`` receives the
        server's progress notifications for the call, and ``asker`` (a ``QuestionAsker``)
        answers its requests for the person's input (see ``Connection.call``).
        A per-user OAuth server's call runs on ``user_id``'s own connection; without
        their authorization it answers a Hint carrying the link that starts it.
        """
        connection = self._connections.get(server_id)
        if connection is not None and not self._usable(server_id, connection):
            connection = self._await_reconnect(server_id, connection, cancelled)
        if connection is not None and connection.config.authorization == MCPAuthorization.USER:
            try:
                connection = self._run(self._user_connection(connection, user_id), CONNECT_TIMEOUT + 5)
            except (MCPError, TimeoutError) as exc:
                return _not_authorized(connection.config.name, exc)
        breaker = self._admit(server_id, connection)
        if isinstance(breaker, Err):
            return breaker
        assert connection is not None  # _admit refuses a server with none
        started, conn, timeout = time.monotonic(), connection.config.name, connection.config.call_timeout
        try:
            result = self._run(connection.call(tool, arguments, timeout, progress, asker), timeout, cancelled)
        except CallCancelled:
            return Err(f"cancelled by the user; MCP server {conn!r} was told to stop {tool!r}", "Cancelled")
        except ConnectionLost as exc:
            self._event(server_id).clear()  # before the loop notices: waiters must see the reconnect
            remaining = timeout - (time.monotonic() - started)
            if tool in connection.config.idempotent_tools and self.wait_connected(server_id, max(remaining, 0)):
                return self._retry(server_id, tool, arguments)
            return _lost_under_call(conn, exc)
        except Exception as exc:  # noqa: BLE001 - a timeout or the SDK's protocol errors: a typed Err
            return _failed(conn, tool, timeout, breaker, exc)
        breaker.success()
        return to_envelope(conn, tool, result)

    async def acall_tool(
        self,
        server_id: int,
        tool: str,
        arguments: dict,
        progress: Progress | None = None,
        asker: Any = None,
        *,
        user_id: str | int = "",
    ) -> Ok | Hint | Err:
        """``call_tool`` for a coroutine, with nothing blocking its loop: run right there when
        that loop is the MCP loop, else with one hop to it and back (no thread between).
        A cancel of the awaiting coroutine cancels the request, and the SDK tells the
        server to stop, as ``call_tool``'s ``cancelled`` does."""
        found = self._connections.get(server_id)
        connection = found
        if found is not None and not self._usable(server_id, found):
            connection = await self._areconnected(server_id, found)
        if connection is not None and connection.config.authorization == MCPAuthorization.USER:
            try:
                connection = await self._aon_loop(self._user_connection(connection, user_id), CONNECT_TIMEOUT + 5)
            except (MCPError, TimeoutError) as exc:
                return _not_authorized(connection.config.name, exc)
        admitted = self._admit(server_id, connection)
        if isinstance(admitted, Err):
            return admitted
        assert connection is not None  # _admit refuses a server with none
        config, started = connection.config, time.monotonic()
        try:
            call = connection.call(tool, arguments, config.call_timeout, progress, asker)
            result = await self._aon_loop(call, config.call_timeout)
        except ConnectionLost as exc:
            self._event(server_id).clear()
            remaining = config.call_timeout - (time.monotonic() - started)
            if tool in config.idempotent_tools and await self._aconnected(server_id, remaining):
                return await self._aretry(server_id, tool, arguments)
            return _lost_under_call(config.name, exc)
        except Exception as exc:  # noqa: BLE001 - a timeout or the SDK's protocol errors: a typed Err
            return _failed(config.name, tool, config.call_timeout, admitted, exc)
        admitted.success()
        return to_envelope(config.name, tool, result)

    # --- per-user OAuth connections ----------------------------------------------------

    async def _user_connection(self, listing: Connection, user_id: str | int) -> Connection:
        """The open connection of ``user_id`` to a per-user OAuth server (opened on first
        use, with that user's grant). Raises AuthorizationRequired (carrying the connect
        link) when the user has no grant or it no longer works, MCPError otherwise."""
        from registry.mcp.oauth import AuthorizationRequired, connect_url

        config = listing.config
        link = connect_url(config.id)
        owner = int(user_id) if str(user_id).isdigit() else None
        if owner is None:
            raise AuthorizationRequired(f"MCP server {config.name!r} works only for a signed-in user", link)
        key = (config.id, owner)
        found = self._user_connections.get(key)
        if found is not None and found.alive:
            return found
        if not await asyncio.to_thread(_with_db, _has_grant, config.id, owner):
            raise AuthorizationRequired(f"MCP server {config.name!r} needs your authorization: open {link}", link)
        fresh = Connection(
            dataclasses.replace(config, oauth_user_id=owner, oauth_flow=None),
            listing._pinned,
            on_tools_changed=_ignore_listing,
            on_lost=lambda _reason: self._forget_lost(key),
        )
        try:
            await fresh.open(CONNECT_TIMEOUT)
        except MCPError as exc:
            if "AuthorizationRequired" in str(exc) or "needs your authorization" in str(exc):
                raise AuthorizationRequired(
                    f"MCP server {config.name!r} needs your authorization again: open {link}", link
                ) from None
            raise
        self._user_connections[key] = fresh
        return fresh

    def _forget_lost(self, key: tuple[int, int]) -> None:
        """A user's session ended by itself: the next call opens a fresh one."""
        self._user_connections.pop(key, None)

    def forget_user(self, server_id: int, user_id: int | None = None) -> None:
        """Close one user's connection to the server (every user's with ``user_id`` None):
        their grant was revoked."""
        keys = [key for key in list(self._user_connections) if key[0] == server_id and user_id in (None, key[1])]
        for key in keys:
            connection = self._user_connections.pop(key, None)
            if connection is not None:
                try:
                    self._run(connection.close(), 15.0)
                except TimeoutError:
                    logger.warning("MCP server %s did not close within 15 s", connection.config.name)

    # --- resources ---------------------------------------------------------------

    def resources(self, server_id: int, limit: int = 200) -> tuple[list[Any], list[Any]]:
        """The server's resources and resource templates. Raises MCPError saying why not."""
        return self._ask(server_id, lambda connection: connection.resources(limit))

    def read_resource(self, server_id: int, uri: str) -> Any:
        """resources/read on the server. Raises MCPError saying why not (an unknown URI included)."""
        return self._ask(server_id, lambda connection: connection.read_resource(uri))

    def watch_resource(self, server_id: int, uri: str) -> str:
        """Subscribe to a resource's changes (registry/mcp/watching.py). Raises MCPError saying why not."""
        return self._ask(server_id, lambda connection: connection.watch_resource(uri))

    def changed_resources(self, server_id: int) -> list[str]:
        """The watched resources the server said changed since they were last read."""
        connection = self._connections.get(server_id)
        return sorted(connection.watching.changed) if connection is not None else []

    # --- prompts -----------------------------------------------------------------

    def prompts(self, server_id: int, limit: int = 200) -> list[Any]:
        """The server's prompts. Raises MCPError saying why not."""
        return self._ask(server_id, lambda connection: connection.prompts(limit))

    def get_prompt(self, server_id: int, name: str, arguments: dict[str, str]) -> Any:
        """prompts/get on the server. Raises MCPError saying why not (an unknown prompt included)."""
        return self._ask(server_id, lambda connection: connection.get_prompt(name, arguments))

    def _ask(self, server_id: int, request: Any) -> Any:
        """One request to a connected server within its call timeout, its failures as MCPError."""
        from mcp.shared.exceptions import MCPError as SDKError

        connection = self._connections.get(server_id)
        if connection is None or not connection.alive:
            raise MCPError("this MCP server is not connected")
        name, timeout = connection.config.name, connection.config.call_timeout
        try:
            return self._run(request(connection), timeout)
        except TimeoutError:
            raise MCPError(f"MCP server {name!r} did not answer within {timeout:g} s") from None
        except ConnectionLost as exc:
            raise MCPError(f"MCP server {name!r} went away: {exc}") from None
        except SDKError as exc:
            raise MCPError(f"MCP server {name!r} refused: {exc}") from None

    def _admit(self, server_id: int, connection: Connection | None) -> CircuitBreaker | Err:
        """The server's breaker when a call may go to ``connection`` now, else the Err saying why not."""
        if connection is None:
            return Err("this MCP server is not connected", "MCPUnavailable")
        conn = connection.config.name
        if not connection.alive:
            return Err(
                f"MCP server {conn!r} is reconnecting ({connection.lost_reason or 'the connection closed'}); "
                "try again in a moment",
                "MCPConnectionLost",
            )
        breaker = self._breakers.setdefault(server_id, CircuitBreaker())
        blocked = breaker.blocked_for()
        if blocked:
            return Err(
                f"MCP server {conn!r} failed {breaker.threshold} calls in a row; "
                f"calls are paused for {blocked:.0f} s more",
                "MCPUnavailable",
            )
        return breaker

    async def _aon_loop(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        loop = self.loop()
        if asyncio.get_running_loop() is loop:
            async with asyncio.timeout(timeout):
                return await coro
        return await _AwaitedOnLoop(loop, coro).result(timeout)

    def _usable(self, server_id: int, connection: Connection) -> bool:
        """Whether a call may go to ``connection`` now: its session is up and the server is
        marked connected. A call that saw the session die clears the mark at once, before
        the loop notices and ends the session, so the next call waits for the reconnect
        instead of writing to the dead process."""
        # No lock on this per-call path: a dict read, and connect made the event already.
        marked = self._connected.get(server_id)
        return connection.alive and marked is not None and marked.is_set()

    def _settled(self, server_id: int, seen: Connection) -> Connection | None:
        """The connection to call once ``seen`` was replaced (or turned out usable after
        all); None while a reconnect is still under way."""
        current = self._connections.get(server_id)
        if current is None or current is not seen:
            return current or seen
        return seen if self._usable(server_id, seen) else None

    def _await_reconnect(self, server_id: int, lost: Connection, cancelled: Any) -> Connection:
        """The server's connection once a reconnect under way has replaced ``lost``, waiting
        at most RECONNECT_WAIT_SECONDS (a restart is not the server being slow, so the
        call's own timeout starts after it); ``lost`` if it has not."""
        deadline = time.monotonic() + RECONNECT_WAIT_SECONDS
        while time.monotonic() < deadline and not (cancelled is not None and cancelled()):
            settled = self._settled(server_id, lost)
            if settled is not None:
                return settled
            self._event(server_id).wait(0.05)
        return lost

    async def _areconnected(self, server_id: int, lost: Connection) -> Connection:
        """``_await_reconnect`` for a coroutine: it looks every 50 ms."""
        deadline = time.monotonic() + RECONNECT_WAIT_SECONDS
        while time.monotonic() < deadline:
            settled = self._settled(server_id, lost)
            if settled is not None:
                return settled
            await asyncio.sleep(0.05)
        return lost

    async def _aconnected(self, server_id: int, timeout: float) -> bool:
        """``wait_connected`` for a coroutine: it looks every 50 ms."""
        deadline = time.monotonic() + timeout
        # The event is a threading.Event (set by connects on other threads): looked at, not awaited.
        while not (connected := self._event(server_id).is_set()) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        return connected

    def _retry(self, server_id: int, tool: str, arguments: dict) -> Ok | Err:
        connection = self._connections.get(server_id)
        if connection is None:
            return Err("this MCP server is not connected", "MCPUnavailable")
        conn, timeout = connection.config.name, connection.config.call_timeout
        try:
            result = self._run(connection.call(tool, arguments, timeout), timeout)
        except (ConnectionLost, TimeoutError) as exc:
            return Err(f"MCP server {conn!r} failed the retried call: {exc}", "MCPConnectionLost")
        return to_envelope(conn, tool, result)

    async def _aretry(self, server_id: int, tool: str, arguments: dict) -> Ok | Err:
        connection = self._connections.get(server_id)
        if connection is None:
            return Err("this MCP server is not connected", "MCPUnavailable")
        conn, timeout = connection.config.name, connection.config.call_timeout
        try:
            result = await self._aon_loop(connection.call(tool, arguments, timeout), timeout)
        except (ConnectionLost, TimeoutError) as exc:
            return Err(f"MCP server {conn!r} failed the retried call: {exc}", "MCPConnectionLost")
        return to_envelope(conn, tool, result)

    # --- internals ---------------------------------------------------------------

    def _open(self, config: ServerConfig) -> Connection:
        try:
            pinned = transport_of(config).check(config)
        except MissingEndpoint as exc:
            raise MCPError(f"MCP server {config.name!r} has no {exc.field}") from None
        connection = Connection(
            config,
            pinned,
            on_tools_changed=lambda tools: self._tools_changed(config.id, tools),
            on_lost=lambda reason: self._lost(config.id, reason),
        )
        try:
            self._run(connection.open(CONNECT_TIMEOUT), CONNECT_TIMEOUT + 15)
        except TimeoutError:
            raise MCPError(f"MCP server {config.name!r} did not connect within {CONNECT_TIMEOUT:g} s") from None
        self._connections[config.id] = connection
        return connection

    def _adopt(self, connection: Connection, tools: list[RemoteTool]) -> list[str]:
        """Sync rows and (un)register handlers; the names now callable."""
        found = inventory.sync(connection.config, tools)
        registry = _registry()
        for name, why in found.held.items():
            registry.unregister_handler(name, why)
        self._register(connection, found.active)
        registry.invalidate()
        server_id = connection.config.id
        with self._synced:
            self._sync_count[server_id] = self.sync_count(server_id) + 1
            self._synced.notify_all()
        definitions_changed(here=False)
        return list(found.active)

    def _register(self, connection: Connection, active: dict[str, str] | None = None) -> None:
        config = connection.config
        registry = _registry()
        if active is None:
            active = {
                tool_name(config.tenant_id, config.name, tool.name): tool.name
                for tool in connection.tools
                if not tool.unsupported
            }
        for name, remote in active.items():
            if not registry.has_handler(name):
                registry.register_handler(
                    name, _handler(self, config, remote), inline=True, on_loop=_on_loop_handler(self, config, remote)
                )

    def _close(self, server_id: int) -> None:
        connection = self._connections.pop(server_id, None)
        self._breakers.pop(server_id, None)
        if connection is not None:
            config = connection.config
            registry = _registry()
            for tool in connection.tools:
                registry.unregister_handler(
                    tool_name(config.tenant_id, config.name, tool.name), "its MCP server is disconnected"
                )
            try:
                self._run(connection.close(), 15.0)
            except TimeoutError:
                logger.warning("MCP server %s did not close within 15 s", config.name)

    async def _tools_changed(self, server_id: int, tools: list[RemoteTool]) -> None:
        connection = self._connections.get(server_id)
        if connection is None:
            return
        await asyncio.to_thread(_with_db, self._adopt, connection, tools)
        await asyncio.to_thread(mcp_tools_changed, server_id)

    def relist(self, server_id: int) -> None:
        """Another process saw the server's tool list change: re-list it on this process's
        session, if it has one, without waiting (and without telling the others again)."""
        connection = self._connections.get(server_id)
        loop = self._loop
        if connection is None or not connection.alive or loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._arelist(connection), loop)

    async def _arelist(self, connection: Connection) -> None:
        try:
            tools = await asyncio.wait_for(connection.list_now(), connection.config.call_timeout)
        except Exception as exc:  # noqa: BLE001 (its own list_changed or the next connect catches up)
            logger.warning("MCP server %s: re-listing tools failed: %s", connection.config.name, exc)
            return
        connection.tools = tools
        await asyncio.to_thread(_with_db, self._adopt, connection, tools)

    def _lost(self, server_id: int, reason: str) -> None:
        """Called on the loop when a session ends by itself: reconnect with backoff."""
        connection = self._connections.get(server_id)
        if connection is None or self._stopping:
            return
        self._event(server_id).clear()
        logger.warning("MCP server %s: connection lost (%s); reconnecting", connection.config.name, reason)
        task = asyncio.get_running_loop().create_task(self._reconnect(connection, reason))
        self._reconnects.add(task)
        task.add_done_callback(self._reconnects.discard)

    async def _cancel_reconnects(self) -> None:
        tasks = list(self._reconnects)
        for task in tasks:
            task.cancel()
        if tasks:  # asyncio.wait refuses an empty set (a reconnect may have just finished)
            await asyncio.wait(tasks, timeout=15.0)

    async def _reconnect(self, old: Connection, reason: str) -> None:
        server_id, name = old.config.id, old.config.name
        await asyncio.to_thread(_with_db, inventory.mark, server_id, MCPStatus.FAILED, reason)
        delay = 0.5
        while self._connections.get(server_id) is old:
            fresh = Connection(old.config, old._pinned, on_tools_changed=old._on_tools_changed, on_lost=old._on_lost)
            try:
                await fresh.open(CONNECT_TIMEOUT)
            except MCPError as exc:
                logger.warning("MCP server %s: reconnect failed: %s", name, exc)
                await asyncio.sleep(delay)
                delay = min(MAX_BACKOFF, delay * 2)
                continue
            if self._connections.get(server_id) is not old:
                await fresh.close()
                return
            self._connections[server_id] = fresh
            self._breakers.pop(server_id, None)
            await asyncio.to_thread(_with_db, self._adopt, fresh, fresh.tools)
            await asyncio.to_thread(_with_db, lambda: inventory.mark(server_id, MCPStatus.CONNECTED, keep_error=True))
            self._event(server_id).set()
            return

    def _event(self, server_id: int) -> threading.Event:
        with self._lock:
            return self._connected.setdefault(server_id, threading.Event())

    def _server_lock(self, server_id: int) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(server_id, threading.Lock())


def _has_grant(server_id: int, user_id: int) -> bool:
    from registry.models import MCPOAuthGrant

    return MCPOAuthGrant.objects.owned_by(server_id, user_id).exclude(tokens="").exists()


async def _ignore_listing(_tools: list[RemoteTool]) -> None:
    """A user's own session does not re-list: the server's listing connection does."""


def _not_authorized(conn: str, exc: Exception) -> Hint | Err:
    """A call the user's authorization is missing for: a Hint with the link; else the Err."""
    from registry.mcp.oauth import AuthorizationRequired

    if isinstance(exc, AuthorizationRequired):
        return Hint("fetch", f"{exc}, then call again")
    return Err(f"MCP server {conn!r} could not be reached for this user: {exc}", "MCPUnavailable")


def _lost_under_call(conn: str, exc: ConnectionLost) -> Err:
    return Err(f"MCP server {conn!r} went away during the call: {exc}; reconnecting", "MCPConnectionLost")


def _failed(conn: str, tool: str, timeout: float, breaker: CircuitBreaker, exc: Exception) -> Err:
    """The Err of a call the server failed (counted by the breaker); anything else is raised."""
    from mcp.shared.exceptions import MCPError as SDKError

    if isinstance(exc, TimeoutError):
        breaker.failure()
        return Err(f"MCP server {conn!r} did not answer {tool!r} within {timeout:g} s", "TimeoutError")
    if isinstance(exc, InvalidResult):
        breaker.failure()
        return Err(
            f"MCP server {conn!r} answered {tool!r} with a result that breaks the tool's own outputSchema: {exc}",
            "MCPResultInvalid",
        )
    if not isinstance(exc, SDKError):
        raise exc
    breaker.failure()
    return Err(f"MCP server {conn!r} failed the call: {exc}", "MCPProtocolError")


def _handler(manager: MCPManager, config: ServerConfig, tool: str):
    server_id = config.id

    def call_mcp_tool(inputs: dict, context: ToolContext) -> Ok | Hint | Err:
        token = context.cancel
        cancelled = (lambda: token.cancelled) if token is not None else None
        person = Person.behind(context)
        result = manager.call_tool(
            server_id, tool, inputs, cancelled, _watched(context), person, user_id=context.user_id
        )
        return person.bill(result, context) if person is not None else result

    call_mcp_tool.__qualname__ = f"mcp:{config.name}:{tool}"
    return call_mcp_tool


def _watched(context: ToolContext) -> Progress | None:
    """The call's progress reporter when someone watches it (a turn does), else None: a
    call nobody watches asks the server for no progress notifications."""
    return None if context.progress is no_progress else context.progress


def _on_loop_handler(manager: MCPManager, config: ServerConfig, tool: str):
    """The handler's twin for ``aexecute_tool``: awaited on the caller's event loop (a turn
    cancels it by cancelling the call's task)."""
    server_id = config.id

    async def acall_mcp_tool(inputs: dict, context: ToolContext) -> Ok | Hint | Err:
        person = Person.behind(context)
        result = await manager.acall_tool(server_id, tool, inputs, _watched(context), person, user_id=context.user_id)
        if person is not None and person.spent:  # billing an Err writes a row
            result = await asyncio.to_thread(_with_db, person.bill, result, context)
        return result

    acall_mcp_tool.__qualname__ = f"mcp:{config.name}:{tool}"
    return acall_mcp_tool


def _with_db(func, *args):  # noqa: ANN001, ANN202
    try:
        return func(*args)
    finally:
        close_old_connections()


def _registry():  # noqa: ANN202
    from registry.registry import get_registry

    return get_registry()


get_manager: Lazy[MCPManager] = Lazy(MCPManager)  # the process-wide manager

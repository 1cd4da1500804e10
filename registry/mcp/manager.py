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
import concurrent.futures
import logging
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import close_old_connections

from registry.contract import Err, Ok
from registry.mcp import MCPError, require_sdk
from registry.mcp import inventory
from registry.mcp.breaker import CircuitBreaker
from registry.mcp.config import CONNECT_TIMEOUT, ServerConfig
from registry.mcp.connection import Connection, ConnectionLost
from registry.mcp.naming import RemoteTool, tool_name
from registry.mcp.results import to_envelope
from registry.mcp.urls import check_url
from registry.models import MCPServer, MCPStatus, MCPTransport

logger = logging.getLogger("eunice.mcp")
T = TypeVar("T")

MAX_BACKOFF = 60.0


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

class MCPManager:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._connections: dict[str, Connection] = {}
        self._breakers: dict[str, CircuitBreaker] = {}
        self._backoff: dict[str, _Backoff] = {}
        self._connected: dict[str, threading.Event] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.RLock()
        self._stopping = False
        self._reconnects: set[asyncio.Task] = set()
        self._synced = threading.Condition()
        self._sync_count: dict[str, int] = {}

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
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        deadline = time.monotonic() + timeout
        try:
            if cancelled is None:
                return future.result(timeout)
            while True:
                try:
                    return future.result(min(0.05, max(0.0, deadline - time.monotonic())))
                except concurrent.futures.TimeoutError:
                    if cancelled():
                        # Cancelling the request task makes the SDK send the server
                        # notifications/cancelled: the server stops the work too.
                        future.cancel()
                        raise CallCancelled from None
                    if time.monotonic() >= deadline:
                        raise
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    # --- lifecycle -------------------------------------------------------------

    def connect(self, config: ServerConfig) -> dict:
        """Open the session, list the tools, sync their rows and register handlers.

        Returns {"tools_discovered": N, "tool_names": [...]} (the callable ones).
        Raises MCPError (or UnsafeURL, MCPUnavailable, NameCollision) saying why not.
        """
        require_sdk()
        with self._server_lock(config.name):
            self._close(config.name)
            self._event(config.name).clear()
            try:
                connection = self._open(config)
                try:
                    active = self._adopt(connection, connection.tools)
                except MCPError:
                    self._close(config.name)
                    raise
            except MCPError as exc:
                inventory.mark(config.name, MCPStatus.FAILED, str(exc))
                raise
            inventory.mark(config.name, MCPStatus.CONNECTED)
            self._backoff.pop(config.name, None)
            self._event(config.name).set()
        return {"tools_discovered": len(connection.tools), "tool_names": sorted(active)}

    def disconnect(self, name: str) -> int:
        """Close the session and soft-delete the server's rows; returns how many."""
        with self._server_lock(name):
            self._close(name)
            retired = inventory.retire(name)
            _registry().invalidate()
            inventory.mark(name, MCPStatus.DISCONNECTED)
        return retired

    def reconnect(self, config: ServerConfig) -> dict:
        """Disconnect and connect again (the tool list may have changed)."""
        self.disconnect(config.name)
        return self.connect(config)

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
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10.0)
            if not thread.is_alive():
                loop.close()
        self._stopping = False

    def is_connected(self, name: str) -> bool:
        connection = self._connections.get(name)
        return connection is not None and connection.alive

    def wait_connected(self, name: str, timeout: float) -> bool:
        """Block until the server is (re)connected, at most ``timeout`` seconds."""
        return self._event(name).wait(timeout)

    def sync_count(self, name: str) -> int:
        """How many times the server's tool list has been synced into rows in this process."""
        return self._sync_count.get(name, 0)

    def wait_synced(self, name: str, past: int, timeout: float) -> bool:
        """Block until the tool list has been synced more than ``past`` times (at most ``timeout`` s)."""
        with self._synced:
            return self._synced.wait_for(lambda: self.sync_count(name) > past, timeout)

    def ensure_connected(self, name: str) -> str:
        """Make sure this process has the server's handlers; returns "" or why not.

        Connects from the server's row when needed, once at a time, and not
        again before the backoff after a failure has passed.
        """
        connection = self._connections.get(name)
        if connection is not None and connection.alive:
            self._register(connection)
            return ""
        backoff = self._backoff.get(name)
        if backoff is not None and time.monotonic() < backoff.next_try:
            wait = backoff.next_try - time.monotonic()
            return f"its MCP server {name!r} failed to connect ({backoff.last_error}); next try in {wait:.0f} s"
        server = MCPServer.objects.filter(name=name, enabled=True).first()
        if server is None:
            return f"its MCP server {name!r} is not configured or is disabled"
        try:
            self.connect(ServerConfig.from_model(server))
        except MCPError as exc:
            self._backoff.setdefault(name, _Backoff()).failed(str(exc))
            return f"its MCP server {name!r} failed to connect: {exc}"
        return ""

    # --- calls -------------------------------------------------------------------

    def call_tool(self, conn: str, tool: str, arguments: dict, cancelled: Any = None) -> Ok | Err:
        """tools/call on server ``conn``: an envelope, never an exception.

        A call is retried (once, after the server is reconnected) only when the
        connection was lost under it and the tool is listed as idempotent.
        """
        connection = self._connections.get(conn)
        if connection is None:
            return Err(f"MCP server {conn!r} is not connected", "MCPUnavailable")
        breaker = self._breakers.setdefault(conn, CircuitBreaker())
        blocked = breaker.blocked_for()
        if blocked:
            return Err(
                f"MCP server {conn!r} failed {breaker.threshold} calls in a row; "
                f"calls are paused for {blocked:.0f} s more",
                "MCPUnavailable",
            )
        timeout = connection.config.call_timeout
        started = time.monotonic()
        try:
            result = self._run(connection.call(tool, arguments, timeout), timeout, cancelled)
        except CallCancelled:
            return Err(f"cancelled by the user; MCP server {conn!r} was told to stop {tool!r}", "Cancelled")
        except ConnectionLost as exc:
            self._event(conn).clear()  # before the loop notices: waiters must see the reconnect
            breaker.failure()
            remaining = timeout - (time.monotonic() - started)
            if tool in connection.config.idempotent_tools and self.wait_connected(conn, max(remaining, 0)):
                return self._retry(conn, tool, arguments)
            return Err(f"MCP server {conn!r} went away during the call: {exc}; reconnecting", "MCPConnectionLost")
        except TimeoutError:
            breaker.failure()
            return Err(f"MCP server {conn!r} did not answer {tool!r} within {timeout:g} s", "TimeoutError")
        except Exception as exc:  # noqa: BLE001 - the SDK's protocol errors: shown as a typed Err
            from mcp.shared.exceptions import MCPError as SDKError

            if not isinstance(exc, SDKError):
                raise
            breaker.failure()
            return Err(f"MCP server {conn!r} failed the call: {exc}", "MCPProtocolError")
        breaker.success()
        return to_envelope(conn, tool, result)

    def _retry(self, conn: str, tool: str, arguments: dict) -> Ok | Err:
        connection = self._connections.get(conn)
        if connection is None:
            return Err(f"MCP server {conn!r} is not connected", "MCPUnavailable")
        timeout = connection.config.call_timeout
        try:
            result = self._run(connection.call(tool, arguments, timeout), timeout)
        except (ConnectionLost, TimeoutError) as exc:
            return Err(f"MCP server {conn!r} failed the retried call: {exc}", "MCPConnectionLost")
        return to_envelope(conn, tool, result)

    # --- internals ---------------------------------------------------------------

    def _open(self, config: ServerConfig) -> Connection:
        pinned = None
        if config.transport == MCPTransport.STREAMABLE_HTTP:
            pinned = check_url(config.url, allow_private=config.allow_private)
        elif not config.command:
            raise MCPError(f"MCP server {config.name!r} has no command")
        connection = Connection(
            config,
            pinned,
            on_tools_changed=lambda tools: self._tools_changed(config.name, tools),
            on_lost=lambda reason: self._lost(config.name, reason),
        )
        try:
            self._run(connection.open(CONNECT_TIMEOUT), CONNECT_TIMEOUT + 15)
        except TimeoutError:
            raise MCPError(f"MCP server {config.name!r} did not connect within {CONNECT_TIMEOUT:g} s") from None
        self._connections[config.name] = connection
        return connection

    def _adopt(self, connection: Connection, tools: list[RemoteTool]) -> list[str]:
        """Sync rows and (un)register handlers; the names now callable."""
        found = inventory.sync(connection.config, tools)
        registry = _registry()
        for name, why in found.held.items():
            registry.unregister_handler(name, why)
        self._register(connection, found.active)
        registry.invalidate()
        with self._synced:
            self._sync_count[connection.config.name] = self.sync_count(connection.config.name) + 1
            self._synced.notify_all()
        return list(found.active)

    def _register(self, connection: Connection, active: dict[str, str] | None = None) -> None:
        conn = connection.config.name
        registry = _registry()
        if active is None:
            active = {tool_name(conn, tool.name): tool.name for tool in connection.tools}
        for name, remote in active.items():
            if not registry.has_handler(name):
                registry.register_handler(name, _handler(self, conn, remote), inline=True)

    def _close(self, name: str) -> None:
        connection = self._connections.pop(name, None)
        self._breakers.pop(name, None)
        if connection is not None:
            registry = _registry()
            for tool in connection.tools:
                registry.unregister_handler(tool_name(name, tool.name), "its MCP server is disconnected")
            try:
                self._run(connection.close(), 15.0)
            except TimeoutError:
                logger.warning("MCP server %s did not close within 15 s", name)

    async def _tools_changed(self, name: str, tools: list[RemoteTool]) -> None:
        connection = self._connections.get(name)
        if connection is None:
            return
        await asyncio.to_thread(_with_db, self._adopt, connection, tools)

    def _lost(self, name: str, reason: str) -> None:
        """Called on the loop when a session ends by itself: reconnect with backoff."""
        connection = self._connections.get(name)
        if connection is None or self._stopping:
            return
        self._event(name).clear()
        logger.warning("MCP server %s: connection lost (%s); reconnecting", name, reason)
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
        name = old.config.name
        await asyncio.to_thread(_with_db, inventory.mark, name, MCPStatus.FAILED, reason)
        delay = 0.5
        while self._connections.get(name) is old:
            fresh = Connection(old.config, old._pinned, on_tools_changed=old._on_tools_changed, on_lost=old._on_lost)
            try:
                await fresh.open(CONNECT_TIMEOUT)
            except MCPError as exc:
                logger.warning("MCP server %s: reconnect failed: %s", name, exc)
                await asyncio.sleep(delay)
                delay = min(MAX_BACKOFF, delay * 2)
                continue
            if self._connections.get(name) is not old:
                await fresh.close()
                return
            self._connections[name] = fresh
            self._breakers.pop(name, None)
            await asyncio.to_thread(_with_db, self._adopt, fresh, fresh.tools)
            await asyncio.to_thread(_with_db, lambda: inventory.mark(name, MCPStatus.CONNECTED, keep_error=True))
            self._event(name).set()
            return

    def _event(self, name: str) -> threading.Event:
        with self._lock:
            return self._connected.setdefault(name, threading.Event())

    def _server_lock(self, name: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(name, threading.Lock())


def _handler(manager: MCPManager, conn: str, tool: str):
    def call_mcp_tool(inputs: dict, context: dict) -> Ok | Err:
        token = context.get("_cancel")
        return manager.call_tool(conn, tool, inputs, (lambda: token.cancelled) if token is not None else None)

    call_mcp_tool.__qualname__ = f"mcp:{conn}:{tool}"
    return call_mcp_tool


def _with_db(func, *args):  # noqa: ANN001, ANN202
    try:
        return func(*args)
    finally:
        close_old_connections()


def _registry():  # noqa: ANN202
    from registry.registry import get_registry

    return get_registry()


_manager: MCPManager | None = None
_manager_lock = threading.Lock()


def get_manager() -> MCPManager:
    """The process-wide manager."""
    global _manager
    if _manager is None:
        with _manager_lock:
            if _manager is None:
                _manager = MCPManager()
    return _manager

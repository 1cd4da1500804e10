"""One live session to one MCP server. Everything here runs on the MCP event loop."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

from registry.mcp import MCPError
from registry.mcp.config import ServerConfig
from registry.mcp.naming import RemoteTool
from registry.mcp.transports import transport_of
from registry.mcp.urls import PinnedURL

logger = logging.getLogger("eunice.mcp")


@functools.cache
def _raw_adapter() -> Any:
    """Reads a listing as a plain dict. Built on first use: pydantic is a tenth of a
    second of every process's start, and most processes never list a server's tools."""
    from pydantic import TypeAdapter

    return TypeAdapter(dict[str, Any])


ToolsChanged = Callable[[list[RemoteTool]], Awaitable[None]]
Lost = Callable[[str], None]


class ConnectionLost(MCPError):
    """The session ended under a call (process exit, protocol violation, closed stream)."""


class Connection:
    def __init__(
        self,
        config: ServerConfig,
        pinned: PinnedURL | None,
        *,
        on_tools_changed: ToolsChanged,
        on_lost: Lost,
    ) -> None:
        self.config = config
        self.tools: list[RemoteTool] = []
        self.lost_reason = ""
        self._pinned = pinned
        self._on_tools_changed = on_tools_changed
        self._on_lost = on_lost
        self._session: Any = None
        self._task: asyncio.Task | None = None
        self._closing: asyncio.Event | None = None
        self._ready: asyncio.Future | None = None
        self._stdio: Any = None
        self._refusal: Any = None  # registry.mcp.http.HTTPRefusal of an HTTP server
        self._background: set[asyncio.Task] = set()
        # list_changed coalescing: one re-listing in flight, at most one more owed after it.
        self._relisting: asyncio.Task | None = None
        self._relist_owed = False

    @property
    def alive(self) -> bool:
        return self._session is not None

    async def open(self, timeout: float) -> list[RemoteTool]:
        """Start the session and list the tools. Raises MCPError saying why it failed."""
        self._closing = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(), name=f"mcp:{self.config.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            self._task.cancel()
            await asyncio.wait([self._task], timeout=10.0)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise MCPError(f"MCP server {self.config.name!r} did not finish connecting within {timeout:g} s") from None

    async def close(self, timeout: float = 10.0) -> None:
        if self._closing is not None:
            self._closing.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except TimeoutError:
                task.cancel()

    async def call(self, tool: str, arguments: dict, timeout: float) -> Any:
        """tools/call. Raises ConnectionLost, TimeoutError or the SDK's MCPError."""
        from mcp.shared.exceptions import MCPError as SDKError

        session = self._session
        if session is None:
            raise ConnectionLost(self.lost_reason or "not connected")
        # The caller's bounded wait (MCPManager._run) enforces ``timeout`` and
        # cancels this coroutine; a wait_for here would cost a task per call.
        try:
            return await session.call_tool(tool, arguments)
        except SDKError as exc:
            if self._session is None or self._stdio_ended():
                raise ConnectionLost(self._stdio_reason() or self.lost_reason or "connection closed") from None
            refused = self._refused(exc)
            if refused:
                raise SDKError(exc.error.code, refused) from None
            raise

    async def list_now(self) -> list[RemoteTool]:
        """tools/list now, as the server answers it (the rows are not touched).
        Raises ConnectionLost when there is no session."""
        session = self._session
        if session is None:
            raise ConnectionLost(self.lost_reason or "not connected")
        return await _list_tools(session)

    async def _run(self) -> None:
        from mcp import ClientSession

        assert self._ready is not None
        reason = ""
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._on_message))
                await session.initialize()
                self.tools = await _list_tools(session)
                self._session = session
                self._ready.set_result(self.tools)
                await self._until_done()
                reason = self._stdio_reason()
        except Exception as exc:  # noqa: BLE001 - a task boundary: the reason becomes last_error
            reason = self._stdio_reason() or self._refused(exc) or describe_failure(exc)
            logger.warning("MCP server %s: %s", self.config.name, reason, exc_info=exc)
        finally:
            self._session = None
            for task in self._background:
                task.cancel()
        if not self._ready.done():
            self._ready.set_exception(MCPError(f"MCP server {self.config.name!r}: {reason or 'closed'}"))
            return
        if not self._closing.is_set():
            self.lost_reason = reason or "the connection closed"
            self._on_lost(self.lost_reason)

    def _transport(self) -> Any:
        opened = transport_of(self.config).open(self.config, self._pinned)
        self._stdio, self._refusal = opened.stdio, opened.refusal
        return opened.context

    async def _until_done(self) -> None:
        assert self._closing is not None
        waiters = [asyncio.create_task(self._closing.wait())]
        if self._stdio is not None:
            waiters.append(asyncio.create_task(self._stdio.ended.wait()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _stdio_ended(self) -> bool:
        return self._stdio is not None and self._stdio.ended.is_set()

    def _stdio_reason(self) -> str:
        return self._stdio.reason if self._stdio_ended() else ""

    def _refused(self, exc: BaseException) -> str:
        """``exc`` said in words when it is the SDK's stand-in for an HTTP error
        status ("Server returned an error response"): which status, and whether
        the server wants authorization. "" otherwise."""
        if self._refusal is None or not self._refusal.status or SDK_HTTP_ERROR not in _messages(exc):
            return ""
        text = self._refusal.describe()
        self._refusal.status = 0
        return text

    async def _on_message(self, message: Any) -> None:
        import mcp_types

        if isinstance(message, mcp_types.ToolListChangedNotification):
            # A burst of notifications costs one re-listing now and one after it, not one each:
            # the last re-listing starts after the last notification, so it sees the final list.
            if self._relisting is not None and not self._relisting.done():
                self._relist_owed = True
                return
            task = asyncio.create_task(self._relist_while_owed())
            self._relisting = task
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        elif isinstance(message, Exception):
            logger.warning("MCP server %s sent something unreadable: %s", self.config.name, message)

    async def _relist_while_owed(self) -> None:
        while True:
            self._relist_owed = False
            await self._relist()
            if not self._relist_owed:
                return

    async def _relist(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            self.tools = await asyncio.wait_for(_list_tools(session), self.config.call_timeout)
            await self._on_tools_changed(self.tools)
        except Exception as exc:  # noqa: BLE001 - a background task: log and keep the session
            logger.warning("MCP server %s: re-listing tools failed: %s", self.config.name, exc, exc_info=exc)


async def _list_tools(session: Any) -> list[RemoteTool]:
    """Every page of tools/list, each entry kept as the server sent it.

    The SDK's Tool model drops fields it does not know; approval must cover
    those too, so the listing is read raw. The SDK still gets its parsed copy
    (it keeps output schemas and header maps per tool from it).
    """
    import mcp_types

    tools: list[RemoteTool] = []
    cursor = None
    while True:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        raw = await session.send_request(mcp_types.ListToolsRequest(params=params), _raw_adapter())
        entries = [entry for entry in raw.get("tools") or [] if isinstance(entry, dict)]
        parsed = mcp_types.ListToolsResult.model_validate({**raw, "tools": entries})
        absorb = getattr(session, "_absorb_tool_listing", None)
        if absorb is not None:
            parsed = absorb(parsed, complete=params is None and parsed.next_cursor is None)
        kept = {tool.name for tool in parsed.tools}  # the SDK may drop invalid tools
        tools.extend(RemoteTool(entry) for entry in entries if entry.get("name") in kept)
        cursor = parsed.next_cursor
        if not cursor:
            return tools


SDK_HTTP_ERROR = "Server returned an error response"


def _messages(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return " ".join(_messages(inner) for inner in exc.exceptions)
    return str(getattr(getattr(exc, "error", None), "message", "") or exc)


def describe_failure(exc: BaseException) -> str:
    """A one-line reason without a traceback (or a header value) in it."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_failure(inner) for inner in exc.exceptions[:3])
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found: {exc.filename}"
    if isinstance(exc, PermissionError):
        return f"the command may not be run: {exc.filename}"
    message = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {message}"[:500]

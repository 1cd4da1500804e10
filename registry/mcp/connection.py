"""One live session to one MCP server. Everything here runs on the MCP event loop."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

from registry.mcp import MCPError, sampling
from registry.mcp.config import ServerConfig
from registry.mcp.elicitation import Askers
from registry.mcp.elicitation import callback as elicitation_callback
from registry.mcp.naming import RemoteTool
from registry.mcp.transports import transport_of
from registry.mcp.urls import PinnedURL
from registry.mcp.watching import Watching

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


class InvalidResult(MCPError):
    """The server's structured content does not match the outputSchema it declared."""


# The SDK's words when a result breaks the tool's declared outputSchema (ClientSession.call_tool).
_INVALID_RESULT = re.compile(
    r"has an output schema but did not return|Invalid structured content|Invalid schema for tool"
)

# A running call's progress reporter: ``report(message, fraction=None)`` (ToolContext.progress).
Progress = Callable[..., None]


def _progress_callback(report: Progress) -> Callable[[float, float | None, str | None], Awaitable[None]]:
    """The SDK's progress callback for ``report``: the server's message (or "n of total"),
    and the fraction done when the server knows the total."""

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        fraction = progress / total if total else None
        report(message or (f"{progress:g} of {total:g}" if total else f"{progress:g} done"), fraction)

    return on_progress


class Connection:
    def __init__(
        self,
        config: ServerConfig,
        pinned: PinnedURL | None,
        *,
        on_tools_changed: ToolsChanged,
        on_lost: Lost,
        elicitation: Any = None,
        modern_first: bool = False,
        sampling_by_person: bool = True,
    ) -> None:
        self.config = config
        self._modern_first = modern_first
        # Who answers a server's request for input: the person behind the call (the default),
        # or the SDK callback given here (the conformance client's).
        self.askers = Askers()
        self._elicitation = elicitation or elicitation_callback(self.askers, config.name)
        # A model's completion for the server, once the person approves it (registry/mcp/sampling.py).
        self._sampling = sampling.callback(self.askers, config.name) if sampling_by_person else None
        self.watching = Watching(config.name)  # resource subscriptions (registry/mcp/watching.py)
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

    @property
    def protocol_version(self) -> str | None:
        """The revision agreed with the server (None before the session is up)."""
        session = self._session
        return session.protocol_version if session is not None else None

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

    async def call(
        self, tool: str, arguments: dict, timeout: float, progress: Progress | None = None, asker: Any = None
    ) -> Any:
        """tools/call. Raises ConnectionLost, TimeoutError, InvalidResult or the SDK's MCPError.

        With ``progress`` the request carries a progress token, and each progress
        notification the server sends for it is reported as ``progress(message, fraction)``.
        ``asker`` (a ``QuestionAsker``) answers the server's requests for input during the
        call (registry/mcp/elicitation.py); without one they are refused.
        """
        with self.askers.calling(asker):
            return await self._call(tool, arguments, progress)

    async def _call(self, tool: str, arguments: dict, progress: Progress | None) -> Any:
        from mcp.shared.exceptions import MCPError as SDKError

        session = self._session
        if session is None:
            raise ConnectionLost(self.lost_reason or "not connected")
        # The caller's bounded wait (MCPManager._run) enforces ``timeout`` and
        # cancels this coroutine; a wait_for here would cost a task per call.
        on_progress = _progress_callback(progress) if progress is not None else None
        try:
            result = await session.call_tool(tool, arguments, progress_callback=on_progress, allow_input_required=True)
            if _needs_input(result):
                result = await _with_input(session, result, tool, arguments, on_progress)
            return result
        except ValueError as exc:
            from pydantic import ValidationError  # loaded already: the SDK parsed the answer with it

            if isinstance(exc, ValidationError):  # the answer is no result of the negotiated revision
                raise InvalidResult(f"the answer is not a valid tools/call result: {_first_error(exc)}") from None
            raise
        except RuntimeError as exc:
            # The SDK checks structured content against the tool's outputSchema and says
            # so with a RuntimeError; any other RuntimeError is not the server's doing.
            if _INVALID_RESULT.search(str(exc)):
                raise InvalidResult(str(exc)[:500]) from None
            raise
        except SDKError as exc:
            if self._session is None or self._stdio_ended():
                raise ConnectionLost(self._stdio_reason() or self.lost_reason or "connection closed") from None
            refused = self._refused(exc)
            if refused:
                raise SDKError(exc.error.code, refused) from None
            raise

    async def resources(self, limit: int) -> tuple[list[Any], list[Any]]:
        """The server's resources and resource templates (every page, at most ``limit`` of
        each); two empty lists when it declares no resources capability."""
        session = self._live_session()
        capabilities = session.server_capabilities
        if capabilities is None or capabilities.resources is None:
            return [], []
        listed = await _every_page(session.list_resources, "resources", limit)
        templates = await _every_page(session.list_resource_templates, "resource_templates", limit)
        return listed, templates

    async def read_resource(self, uri: str) -> Any:
        """resources/read. Raises ConnectionLost or the SDK's MCPError (e.g. an unknown URI)."""
        result = await self._live_session().read_resource(uri)
        self.watching.read(uri)
        return result

    async def watch_resource(self, uri: str) -> str:
        """Subscribe to the resource's changes; what happened, in words."""
        return await self.watching.watch(self._live_session(), uri, self._start)

    async def prompts(self, limit: int) -> list[Any]:
        """The server's prompts (every page, at most ``limit``); empty without a prompts capability."""
        session = self._live_session()
        capabilities = session.server_capabilities
        if capabilities is None or capabilities.prompts is None:
            return []
        return await _every_page(session.list_prompts, "prompts", limit)

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Any:
        """prompts/get. Raises ConnectionLost or the SDK's MCPError (e.g. an unknown prompt)."""
        return await self._live_session().get_prompt(name, arguments)

    def _live_session(self) -> Any:
        if self._session is None:
            raise ConnectionLost(self.lost_reason or "not connected")
        return self._session

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
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._on_message,
                        elicitation_callback=self._elicitation,
                        sampling_callback=self._sampling,
                    )
                )
                await _negotiate(session, self._modern_first)
                self.tools = await _list_tools(session)
                self._session = session
                if _is_modern(session):
                    self._start(self._listen_for_changes(session))
                self._ready.set_result(self.tools)
                await self._until_done()
                reason = self._stdio_reason()
        except Exception as exc:  # noqa: BLE001 - a task boundary: the reason becomes last_error
            await self._stdio_settled()
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

    async def _stdio_settled(self, within: float = 2.0) -> None:
        """After a failure, give a stdio process that is exiting a moment to be seen exiting:
        the SDK's "Connection closed" can arrive before the exit is noticed, and the exit
        code and stderr lines are the reason worth showing."""
        if self._stdio is None or self._stdio.ended.is_set():
            return
        try:
            await asyncio.wait_for(self._stdio.ended.wait(), within)
        except TimeoutError:
            pass

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
            self._tools_changed()
        elif isinstance(message, mcp_types.ResourceUpdatedNotification):
            self.watching.updated(str(message.params.uri))
        elif isinstance(message, Exception):
            logger.warning("MCP server %s sent something unreadable: %s", self.config.name, message)

    def _start(self, coro: Any) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _listen_for_changes(self, session: Any) -> None:
        """At 2026-07-28 a server announces a changed tool list on a ``subscriptions/listen``
        stream, not as a notification: listen for the session's life, and treat each event
        as the older revision's ``list_changed`` (the same coalesced re-listing). A server
        that refuses to listen keeps working; its changes are seen at the next connect."""
        from mcp.client.subscriptions import listen

        try:
            async with listen(session, tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._tools_changed()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a background task: log and keep the session
            logger.info("MCP server %s: no change subscription (%s)", self.config.name, describe_failure(exc))

    def _tools_changed(self) -> None:
        """A burst of announcements costs one re-listing now and one after it, not one each:
        the last re-listing starts after the last announcement, so it sees the final list."""
        if self._relisting is not None and not self._relisting.done():
            self._relist_owed = True
            return
        self._relisting = self._start(self._relist_while_owed())

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


def _first_error(exc: Any) -> str:
    """The first of a pydantic ValidationError's errors, where and what, in one line."""
    errors = exc.errors()
    if not errors:
        return "unreadable"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "the result"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"[:300]


def _needs_input(result: Any) -> bool:
    import mcp_types

    return isinstance(result, mcp_types.InputRequiredResult)


async def _with_input(session: Any, first: Any, tool: str, arguments: dict, on_progress: Any) -> Any:
    """At 2026-07-28 a server that needs something from the client mid-call (a person's answer,
    a model's completion) answers ``input_required`` instead of sending a request of its own:
    answer its input requests through the session's callbacks (the same ones the older
    revision's server-to-client requests reach) and retry the call with the responses and its
    opaque ``requestState``, round after round (at most the SDK's cap). A request the client
    cannot answer (no elicitation callback) ends the call as the SDK's MCPError."""
    from mcp.client._input_required import run_input_required_driver
    from mcp.client.session import ClientRequestContext

    async def dispatch(key: str, request: Any) -> Any:
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    async def retry(responses: Any, state: str | None) -> Any:
        return await session.call_tool(
            tool,
            arguments,
            progress_callback=on_progress,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )

    return await run_input_required_driver(first, dispatch=dispatch, retry=retry)


async def _negotiate(session: Any, modern_first: bool = False) -> None:
    """Agree on a protocol revision: the ``initialize`` handshake first (2025-11-25, which
    every server Eunice has met speaks, dual-revision servers included), and ``server/discover``
    (2026-07-28: no session, per-request metadata) for a server that refuses the handshake as
    a revision it no longer speaks. Handshake first, not the SDK's discover-first probe: that
    probe has a 10 s timeout of its own, and a slow-starting server under load answered the
    late probe and then refused the fallback handshake, so connects ran past their bound.
    ``modern_first`` asks for the SDK's discover-first policy (a caller that knows the
    server is a 2026-07-28 one: the conformance client)."""
    from mcp.shared.exceptions import MCPError as SDKError

    if modern_first:
        from mcp.client._probe import negotiate_auto  # the SDK's own policy, as Client(mode="auto")

        await negotiate_auto(session)
        return
    try:
        await session.initialize()
    except (SDKError, RuntimeError) as exc:
        if not _refuses_the_handshake(exc):
            raise
        await session.discover()


def _refuses_the_handshake(exc: Any) -> bool:
    """Whether a failed ``initialize`` says the server speaks only a newer revision: a
    -32022 (unsupported protocol version) or -32601 (no such method) error, a 2026-07-28
    HTTP server asking for the per-request ``MCP-Protocol-Version`` header, or a server
    that answered the handshake with a revision the handshake cannot agree on."""
    from mcp_types import METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION

    code = getattr(getattr(exc, "error", None), "code", None)
    if code in (UNSUPPORTED_PROTOCOL_VERSION, METHOD_NOT_FOUND):
        return True
    text = str(exc)
    return "MCP-Protocol-Version" in text or "Unsupported protocol version from the server" in text


def _is_modern(session: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return session.protocol_version in MODERN_PROTOCOL_VERSIONS


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


async def _every_page(list_page: Callable[..., Awaitable[Any]], field: str, limit: int) -> list[Any]:
    """Every page of a paginated list request, at most ``limit`` entries (a server that
    keeps handing out cursors stops being listed there)."""
    import mcp_types

    found: list[Any] = []
    cursor = None
    while len(found) < limit:
        page = await list_page(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return found[:limit]


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

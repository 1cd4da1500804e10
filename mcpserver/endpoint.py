"""Eunice as an MCP server: a tenant's approved tools over streamable HTTP, at /mcp/<bundle>/.

``MCPEndpoint`` is an ASGI app built on the SDK's low-level ``Server`` and its
``StreamableHTTPSessionManager`` (whose sessions answer a call in JSON when nothing else
comes first: mcpserver/json_first.py), which speaks both revisions: 2025-11-25 (an
``initialize`` handshake, then ``Mcp-Session-Id``) and 2026-07-28 (stateless, every
request carrying its own ``_meta``). Before the SDK sees a request, the endpoint

1. checks Host and Origin (``eunice.origins``: DNS rebinding is answered with 403),
2. identifies the caller (mcpserver/callers.py: an API token or an OAuth access token;
   never anonymous, except for the local conformance fixture),
3. counts the request against the caller's REST rate (429 past it).

A caller once identified is remembered for ``IDENTITY_SECONDS`` (2 s), so a session's
requests cost no query each; a revoked token is refused within that time.

``tools/list`` serves the bundle's tools (mcpserver/served.py), paged; ``tools/call``
hands the call to ``ToolRegistry.aexecute_tool`` with the caller's tenant and user, so
it meets the registry's gate (policies, persons' approvals), its workers' per-tenant
slots and the execution log like a call from chat. A call an approval rule makes wait
sends the person to its approval page (mcpserver/approval_flow.py). When an approval or
a bundle edit changes what a client was served, a 2025-11-25 session gets
``notifications/tools/list_changed`` and a 2026-07-28 ``subscriptions/listen`` stream a
``toolsListChanged`` event (within ``WATCH_SECONDS``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import contextlib
import contextvars
import functools
import json
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from django.db.models.signals import post_delete, post_save
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from eunice.origins import http_host_and_origin_allowed
from mcpserver import approval_flow, callers, oauth
from mcpserver.json_first import JSONFirstSessionManager
from mcpserver.models import Bundle
from mcpserver.served import Caller, content_blocks, fingerprint, not_served, served_tools
from registry import aio
from registry.context import ToolContext
from registry.registry import get_registry

logger = logging.getLogger("eunice.mcpserver")

PAGE_SIZE = 100  # tools per tools/list page
WATCH_SECONDS = 1.0  # how often the served lists are compared with what clients were served
SCOPE_KEY = "eunice.mcp.caller"
# A caller once identified is remembered this long: a revoked token, a user made inactive
# or a disabled bundle is refused within it. Refusals are never remembered.
IDENTITY_SECONDS = 2.0
MAX_KNOWN = 4096
# After a client says the person opened the approval page, how long a call waits for
# their decision before it answers that the call still waits (mcpserver/approval_flow.py).
APPROVAL_WAIT_SECONDS = 60.0

Identify = Callable[[str, str, str], "Caller | callers.Refusal"]


class MCPEndpoint:
    """The ASGI app behind ``/mcp`` (every tool the tenant may use, or ``default_bundle``)
    and ``/mcp/<bundle>/``. ``identify`` maps (Authorization header, bundle, the endpoint's
    URL) to a caller;
    the product's is ``callers.identify``. The SDK's session manager starts with the first
    request (or the server's lifespan) on the serving loop."""

    def __init__(
        self,
        *,
        identify: Identify = callers.identify,
        default_bundle: str = "",
        page_size: int = PAGE_SIZE,
        watch_seconds: float = WATCH_SECONDS,
        resource_metadata_url: Callable[[dict], str] | None = oauth.resource_metadata_url,
        requires: Mapping[str, dict] | None = None,
        approval_wait_seconds: float = APPROVAL_WAIT_SECONDS,
    ) -> None:
        self.identify = identify
        self.default_bundle = default_bundle
        self.page_size = page_size
        self.watch_seconds = watch_seconds
        self.resource_metadata_url = resource_metadata_url
        self.requires = dict(requires or {})
        self.approval_wait_seconds = approval_wait_seconds
        self.server: Server[Any] = Server(
            "eunice",
            version="1",
            title="Eunice",
            instructions="Tools approved by this organisation's staff; every call is logged.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=_no_prompts,
            on_list_resources=_no_resources,
            on_list_resource_templates=_no_resource_templates,
            on_subscriptions_listen=self._listen,
            get_tool_input_schema=_input_schema,
        )
        self.manager = JSONFirstSessionManager(app=self.server, stateless=False)
        self._options = NotificationOptions(tools_changed=True)
        self._sessions: dict[tuple[str, str], weakref.WeakSet] = {}
        self._buses: dict[tuple[str, str], tuple[InMemorySubscriptionBus, ListenHandler]] = {}
        self._served: dict[tuple[str, str], str] = {}  # key -> fingerprint of what was served
        # (authorization, bundle, resource) -> caller, until
        self._known: dict[tuple[str, str, str], tuple[Caller, float]] = {}
        self._ready: asyncio.Event | None = None
        self._runner: asyncio.Task | None = None
        _advertise_list_changed(self.server, self._options)
        # A bundle saved or deleted in this process: identify its callers afresh (another
        # process's edit reaches a watched bundle through the watcher, any other within
        # IDENTITY_SECONDS). Held weakly: the receiver goes with the endpoint.
        post_save.connect(self._bundle_changed, sender=Bundle)
        post_delete.connect(self._bundle_changed, sender=Bundle)

    # --- ASGI -----------------------------------------------------------------

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "lifespan":
            return await self.lifespan(scope, receive, send)
        bundle = self._bundle_of(scope["path"])
        if bundle is None:
            return await _plain(send, 404, "no such MCP endpoint: use /mcp/ or /mcp/<bundle>/")
        if not http_host_and_origin_allowed(scope):
            return await _plain(send, 403, "the Host or Origin header is not allowed here")
        key = (_header(scope, b"authorization"), bundle, oauth.resource_of(scope))
        if self._admits_here(key):
            found = self._admit(key)
        else:
            found = await aio.in_db_thread(self._admit)(key)
        if isinstance(found, callers.Refusal):
            return await self._refuse(scope, send, found)
        token = AccessToken(token="", client_id=found.principal, scopes=[])
        scope = {**scope, SCOPE_KEY: found, "user": AuthenticatedUser(token)}
        await self.started()
        calling = _CALLER.set(found)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            _CALLER.reset(calling)

    def _admit(self, key: tuple[str, str, str]) -> Caller | callers.Refusal:
        """The caller of (Authorization header, bundle, resource), or why not: identified
        (remembered for ``IDENTITY_SECONDS``), then counted against the REST rate. One trip
        to a database thread for both."""
        now = time.monotonic()
        known = self._known.get(key)
        if known is not None and known[1] > now:
            found: Caller | callers.Refusal = known[0]
        else:
            found = self.identify(*key)
            if isinstance(found, Caller):
                if len(self._known) >= MAX_KNOWN:
                    self._known.clear()
                self._known[key] = (found, now + IDENTITY_SECONDS)
        if isinstance(found, Caller) and not callers.within_rate(found.user_id):
            return callers.Refusal(429, "too many requests: slow down and retry in a second")
        return found

    def _admits_here(self, key: tuple[str, str, str]) -> bool:
        """Whether ``_admit`` needs no query nor network here, so may run on the event loop:
        the caller is remembered and the rate is counted in this process's memory."""
        known = self._known.get(key)
        return known is not None and known[1] > time.monotonic() and _local_cache()

    def _forget(self, key: tuple[str, str] | None = None) -> None:
        """Identify callers (of the tenant and bundle ``key``; None: all) afresh on their next request."""
        self._known = {k: v for k, v in self._known.items() if key is not None and v[0].key != key}

    def _bundle_changed(self, **kwargs: Any) -> None:
        self._forget()

    def _bundle_of(self, path: str) -> str | None:
        parts = [part for part in path.split("/") if part]
        if parts[:1] != ["mcp"] or len(parts) > 2:
            return None
        return parts[1] if len(parts) == 2 else self.default_bundle

    async def _refuse(self, scope: dict, send: Callable, refusal: callers.Refusal) -> None:
        headers = {}
        if refusal.status == 429:
            headers["retry-after"] = "1"
        if refusal.status == 401:
            # RFC 6750 §3: an error code only when credentials were sent.
            parts = ['error="invalid_token"'] if _header(scope, b"authorization") else []
            if self.resource_metadata_url is not None:
                parts.append(f'resource_metadata="{self.resource_metadata_url(scope)}"')
            headers["www-authenticate"] = " ".join(["Bearer", ", ".join(parts)]).strip()
        await _plain(send, refusal.status, refusal.message, headers)

    async def lifespan(self, scope: dict, receive: Callable, send: Callable) -> None:
        """The ASGI lifespan: start the session manager at start-up, stop it at shutdown."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.started()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def started(self) -> None:
        """The session manager and the list watcher, running on this loop (started once)."""
        if self._ready is None:
            self._ready = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()

    async def aclose(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner

    async def _run(self) -> None:
        assert self._ready is not None
        async with self.manager.run():
            self._ready.set()
            while True:
                await asyncio.sleep(self.watch_seconds)
                try:
                    await self._notify_changed_lists()
                except Exception:  # the watcher must outlive one bad look; the next tick retries
                    logger.exception("comparing the served MCP tool lists failed")

    # --- requests -------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = _caller(ctx)
        tools = await aio.in_db_thread(served_tools)(get_registry(), caller.tenant_id, caller.names)
        self._remember(ctx, caller, fingerprint(tools))
        start = _offset(params.cursor if params is not None else None, len(tools))
        page = tools[start : start + self.page_size]
        more = start + self.page_size < len(tools)
        return types.ListToolsResult(
            tools=[types.Tool(name=d.name, description=d.description, input_schema=d.input_schema) for d in page],
            next_cursor=_cursor(start + self.page_size) if more else None,
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        caller = _caller(ctx)
        name = params.name
        if caller.names is not None and name not in caller.names:
            tools = await aio.in_db_thread(served_tools)(get_registry(), caller.tenant_id, caller.names)
            return _error_result(not_served(name, tools))
        if params.request_state is not None:  # a 2026-07-28 retry after an approval's elicitation
            return await approval_flow.answered(ctx, name, params, caller, self.approval_wait_seconds)
        _check_client_capabilities(ctx, name, self.requires.get(name))
        progress = _Progress(ctx)
        waits: list[dict] = []  # the approval card, when a rule makes this call wait for a person
        context = ToolContext(
            tenant_id=caller.tenant_id, user_id=caller.user_id, progress=progress.report, awaiting=waits.append
        )
        result = await get_registry().aexecute_tool(name, dict(params.arguments or {}), context)
        await progress.flush()
        if waits and not result.ok:
            return await approval_flow.ask(ctx, name, waits[0], caller.tenant_id, self.approval_wait_seconds)
        return types.CallToolResult.model_validate({"content": content_blocks(result), "isError": not result.ok})

    async def _listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        caller = _caller(ctx)
        key = caller.key
        if key not in self._served:
            tools = await aio.in_db_thread(served_tools)(get_registry(), caller.tenant_id, caller.names)
            self._served[key] = fingerprint(tools)
        if key not in self._buses:
            bus = InMemorySubscriptionBus()
            self._buses[key] = (bus, ListenHandler(bus))
        return await self._buses[key][1](ctx, params)

    # --- list_changed ---------------------------------------------------------

    def _remember(self, ctx: ServerRequestContext[Any], caller: Caller, served: str) -> None:
        key = caller.key
        self._served[key] = served
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:  # a session that lives on
            # The connection, not ``ctx.session``: that is made afresh for each request. The
            # SDK hands handlers no public reference to it; its ``notify`` never raises.
            connection = ctx.session._connection
            self._sessions.setdefault(key, weakref.WeakSet()).add(connection)

    async def _notify_changed_lists(self) -> None:
        watched = [key for key in self._served if self._sessions.get(key) or key in self._buses]
        if not watched:
            return
        now = await aio.in_db_thread(_fingerprints)(watched)
        for key in watched:
            if now[key] == self._served[key]:
                continue
            self._served[key] = now[key]
            self._forget(key)  # the bundle may have changed: identify its callers afresh
            for connection in list(self._sessions.get(key, ())):
                await connection.notify("notifications/tools/list_changed", None)
            if key in self._buses:
                await self._buses[key][0].publish(ToolsListChanged())


class _Progress:
    """A tool's progress reports as ``notifications/progress`` on the call's own stream, when
    the client asked for them (a progress token). Reports may come from a worker thread."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        meta: dict[str, Any] = dict(ctx.meta or {})
        self.token: str | int | None = meta.get("progress_token", meta.get("progressToken"))
        self.ctx = ctx
        self.request_id = str(ctx.request_id) if ctx.request_id is not None else None
        self.loop = asyncio.get_running_loop()
        self.sent: list[concurrent.futures.Future] = []

    def report(self, message: str, fraction: float | None = None) -> None:
        if self.token is None:
            return
        progress = round(100 * fraction, 3) if fraction is not None else float(len(self.sent) + 1)
        coroutine = self.ctx.session.send_progress_notification(
            self.token, progress, 100 if fraction is not None else None, message or None, self.request_id
        )
        self.sent.append(asyncio.run_coroutine_threadsafe(coroutine, self.loop))

    async def flush(self) -> None:
        """Wait until every report is on the wire: before the result, which ends the stream."""
        if self.sent:
            await asyncio.gather(*(asyncio.wrap_future(sent) for sent in self.sent), return_exceptions=True)


def _fingerprints(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    registry = get_registry()
    now = {}
    for tenant_id, slug in keys:
        names: frozenset[str] | None = None
        if slug:
            row = Bundle.objects.served(tenant_id, slug)
            names = row.names() if row is not None else frozenset()
        now[(tenant_id, slug)] = fingerprint(served_tools(registry, tenant_id, names))
    return now


# The caller of the request being handled, for ``_input_schema`` (the SDK asks it with a
# tool's name only).
_CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("eunice_mcp_caller", default=None)


def _input_schema(name: str) -> Mapping[str, Any] | None:
    """The input schema of ``name`` if the current caller may call it, else None: what the
    SDK checks a stateless ``tools/call``'s ``Mcp-Param-*`` headers against. Read from the
    registry's loaded definitions, on the loop with no query; without it the SDK would run
    the whole ``tools/list`` (a database thread hop and a list built) before every call.
    A tool the loaded definitions do not hold yet (approved less than
    ``EUNICE_REGISTRY_POLL_SECONDS`` ago, and listed by no client of this process since)
    has its headers unchecked, as the SDK does for a tool its listing does not show."""
    caller = _CALLER.get()
    if caller is None or (caller.names is not None and name not in caller.names):
        return None
    definition = get_registry().loaded_definitions().get(name)
    if definition is None or not definition.callable_by(caller.tenant_id):
        return None
    return definition.input_schema


@functools.cache
def _local_cache() -> bool:
    from django.conf import settings

    return settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"


def _caller(ctx: ServerRequestContext[Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get(SCOPE_KEY) if request is not None else None
    if caller is None:  # every request passes MCPEndpoint.__call__ first
        raise MCPError(types.INVALID_REQUEST, "no caller: this request did not come through the endpoint")
    return caller


def _check_client_capabilities(ctx: ServerRequestContext[Any], name: str, required: dict | None) -> None:
    """Raise -32021 (HTTP 400) when the tool needs a client capability this client did not declare."""
    if not required:
        return
    declared = ctx.session.client_capabilities
    missing = {key: value for key, value in required.items() if getattr(declared, key, None) is None}
    if missing:
        raise MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"{name} needs the client capabilities {', '.join(sorted(missing))}, which this client did not declare",
            {"requiredCapabilities": missing},
        )


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


MAX_CURSOR_CHARS = 32  # a cursor this endpoint made is about 12 characters


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _offset(cursor: str | None, total: int) -> int:
    """The offset a client's cursor names: parsed as a short token, never as JSON (a
    client chooses its bytes)."""
    if cursor is None:
        return 0
    invalid = MCPError(types.INVALID_PARAMS, "invalid cursor: pass the nextCursor of the previous page")
    if len(cursor) > MAX_CURSOR_CHARS:
        raise invalid
    try:
        kind, _, number = base64.urlsafe_b64decode(cursor.encode()).decode("ascii").partition(":")
    except (binascii.Error, ValueError) as exc:
        raise invalid from exc
    if kind != "o" or not number.isdigit() or not 0 <= int(number) <= total:
        raise invalid
    return int(number)


def _advertise_list_changed(server: Server[Any], options: NotificationOptions) -> None:
    """Handshake-era clients are told ``tools.listChanged`` (the SDK asks for the options
    at ``initialize``); 2026-07-28 clients learn it from serving ``subscriptions/listen``."""
    plain = server.create_initialization_options

    def with_options(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
        return plain(notification_options or options, *args, **kwargs)

    server.create_initialization_options = with_options  # type: ignore[method-assign]


async def _no_prompts(ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])


async def _no_resources(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def _no_resource_templates(ctx: ServerRequestContext[Any], params: Any) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])


def _header(scope: dict, name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


async def _plain(send: Callable, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(key.encode(), value.encode()) for key, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class MCPMount:
    """HTTP under ``/mcp`` to the endpoint, everything else to ``app`` (Django)."""

    def __init__(self, app: Callable, endpoint: MCPEndpoint) -> None:
        self.app = app
        self.endpoint = endpoint

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and (scope["path"] == "/mcp" or scope["path"].startswith("/mcp/")):
            return await self.endpoint(scope, receive, send)
        return await self.app(scope, receive, send)

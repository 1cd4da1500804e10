"""A 2025-11-25 request's response as one JSON body, unless something else comes first.

The streamable HTTP spec lets a server answer each POSTed request with either
``application/json`` (one response) or ``text/event-stream`` (anything related to the
request, then its response); the client must accept both. The SDK picks once per
server: always SSE (what we need for progress, log messages and approval elicitations
on the call's stream), or always JSON (which drops all of those). SSE costs about half a
millisecond a call on both ends, and most calls send nothing but their result.

``JSONFirstTransport`` picks per request: it waits for the first message the session
routes to the request, and answers with a JSON body when that is the response, or opens
the SSE stream with that message as its first event and streams the rest as the SDK
does. A request still unanswered after ``SSE_AFTER_SECONDS`` gets the SSE stream too,
whose pings keep a proxy from closing an idle connection. That is what the SDK's own
2026-07-28 entry (``mcp/server/_streamable_http_modern.py``) does, so the stateless path
needs nothing of this.

Written against ``mcp==2.3.0`` (``StreamableHTTPServerTransport._handle_post_request``'s
SSE branch, and ``StreamableHTTPSessionManager._admit_session``); read both again when
the pin moves. The transport stays an SSE transport to the SDK (``is_json_response_enabled``
False): its router still delivers every message related to a request, and server-to-client
requests are still allowed. Anything other than a plain request (``initialize``, a
notification, a client's response, a malformed body), a client that does not accept
both content types, a session with an event store (resumable streams) and a manager
made with ``json_response=True`` take the SDK's own path.
"""

from __future__ import annotations

import logging
from functools import partial
from http import HTTPStatus

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import (
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    SSEEvent,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from sse_starlette import EventSourceResponse
from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope, Send

logger = logging.getLogger("eunice.mcpserver")

# As the SDK's 2026-07-28 entry (its _SSE_PING_INTERVAL) and sse-starlette's first ping.
SSE_AFTER_SECONDS = 15.0


class JSONFirstTransport(StreamableHTTPServerTransport):
    """The SDK's session transport, answering a request in JSON when nothing but its
    response belongs to it (module docstring). Methods only, no state of its own: the
    manager turns the SDK's own instance into one (``JSONFirstSessionManager``)."""

    async def _handle_post_request(self, scope: Scope, request: Request, receive: Receive, send: Send) -> None:
        message = await self._plain_request(request)
        if message is None:
            await super()._handle_post_request(scope, request, receive, send)
        elif await self._validate_request_headers(request, send):
            await self._answer(message, request, send)

    async def _plain_request(self, request: Request) -> JSONRPCRequest | None:
        """The POST's request if this class answers it, else None: the SDK's path takes
        it (parsing the body again) or refuses it."""
        if self.is_json_response_enabled or self._event_store is not None:
            return None
        has_json, has_sse = check_accept_headers(request)
        if not (has_json and has_sse) or not self._check_content_type(request):
            return None
        try:
            raw = pydantic_core.from_json(await request.body())
            message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except (ValueError, ValidationError, ClientDisconnect):  # the SDK answers these as it does today
            return None
        if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
            return None
        return message

    async def _answer(self, message: JSONRPCRequest, request: Request, send: Send) -> None:
        """Answer the request with its response in JSON, or with an SSE stream once
        anything else comes first (or nothing comes for a while)."""
        request_id = str(message.id)
        streams = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = streams
        try:
            try:
                first = await self._first_message(message, request, streams[1])
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The session ended (DELETE, idle, shutdown) with this request in flight.
                gone = "Session terminated before the request completed"
                response = self._create_error_response(gone, HTTPStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR)
            else:
                if first is None or not isinstance(first.message, JSONRPCResponse | JSONRPCError):
                    return await self._stream(request_id, streams[1], request, send, first)
                response = self._create_json_response(first.message)
            await response(request.scope, request.receive, send)
        finally:
            # Never left registered: the session's router would wait on a stream nobody reads.
            self._forget(request_id, streams)

    async def _first_message(
        self, message: JSONRPCRequest, request: Request, reader: MemoryObjectReceiveStream[EventMessage]
    ) -> EventMessage | None:
        """Hand the request to the session and return the first message routed to it, or
        None when none comes within ``SSE_AFTER_SECONDS``. Raises anyio's stream errors
        when the session ends first."""
        assert self._read_stream_writer is not None  # connect() runs before any request
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        await self._read_stream_writer.send(self._create_session_message(message, request, str(message.id), version))
        with anyio.move_on_after(SSE_AFTER_SECONDS):
            return await reader.receive()
        return None

    async def _stream(
        self,
        request_id: str,
        reader: MemoryObjectReceiveStream[EventMessage],
        request: Request,
        send: Send,
        first: EventMessage | None,
    ) -> None:
        """The SDK's SSE response for the request, ``first`` (already taken from
        ``reader``) as its first event: the rest is forwarded by the SDK's own writer."""
        sse_writer, sse_reader = anyio.create_memory_object_stream[SSEEvent](0)
        self._sse_stream_writers[request_id] = sse_writer
        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
            **({MCP_SESSION_ID_HEADER: self.mcp_session_id} if self.mcp_session_id else {}),
        }
        # _run_sse_writer sends its "priming event" before forwarding the stream, within
        # its own clean-up: the place for the message already taken.
        opening = self._create_event_data(first) if first is not None else None
        writer = partial(self._run_sse_writer, request_id, sse_writer, reader, opening)
        response = EventSourceResponse(content=sse_reader, data_sender_callable=writer, headers=headers)
        try:
            await response(request.scope, request.receive, send)
        except Exception:  # as the SDK's SSE branch: this stream is gone, the session lives on
            logger.exception("an MCP response stream failed")
        finally:
            sse_writer.close()
            sse_reader.close()
            if self._sse_stream_writers.get(request_id) is sse_writer:
                del self._sse_stream_writers[request_id]

    def _forget(
        self,
        request_id: str,
        streams: tuple[MemoryObjectSendStream[EventMessage], MemoryObjectReceiveStream[EventMessage]],
    ) -> None:
        """Close the request's stream and unregister it, if it is still this one."""
        if self._request_streams.get(request_id) is streams:
            del self._request_streams[request_id]
        streams[0].close()
        streams[1].close()


class JSONFirstSessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager, whose sessions answer through ``JSONFirstTransport``."""

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        """The SDK admits the session (its limit, its owner) with a transport made as it
        makes every one, not yet connected; it becomes ours before any request reaches it.
        ``JSONFirstTransport`` adds no state of its own, so the SDK's instance, built with
        whatever arguments the SDK passes, is kept and only its class changes."""
        admitted = super()._admit_session(requestor)
        if admitted is not None:
            admitted.__class__ = JSONFirstTransport
        return admitted

"""AnthropicProvider: the Messages API through the official ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import ssl
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from functools import cached_property
from urllib.parse import urlsplit

import anthropic
import httpcore2
import httpx2

from llm.anthropic_request import build_params
from llm.anthropic_stream import SSEBuffer, StreamAssembler, StreamError, response_from_message, sse_data
from llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMContextTooLongError,
    LLMError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMResponseError,
)
from llm.types import LLMRequest, LLMResponse, MessageStop, StreamEvent

logger = logging.getLogger("eunice.llm")

_KEY_PATTERN = re.compile(r"sk-ant-[A-Za-z0-9_\-]+")
_DETAIL_LIMIT = 300
# The API's words for a request past the context window, e.g.
# "prompt is too long: 210345 tokens > 200000 maximum".
_TOO_LONG = re.compile(r"prompt is too long(?::\s*(?P<tokens>\d+) tokens\s*>\s*(?P<limit>\d+))?", re.IGNORECASE)
# Error types the API sends in a mid-stream `error` event (HTTP status 200).
_BY_ERROR_TYPE: dict[str, type[LLMError]] = {
    "authentication_error": LLMAuthError,
    "permission_error": LLMAuthError,
    "rate_limit_error": LLMRateLimitError,
    "overloaded_error": LLMOverloadedError,
    "api_error": LLMOverloadedError,
    "invalid_request_error": LLMBadRequestError,
    "request_too_large": LLMBadRequestError,
    "not_found_error": LLMBadRequestError,
}
_SUMMARY: dict[type[LLMError], str] = {
    LLMConnectionError: "The model provider timed out",
    LLMAuthError: "The model provider refused the API key; check ANTHROPIC_API_KEY",
    LLMRateLimitError: "The model provider's rate limit was reached; try again shortly",
    LLMOverloadedError: "The model provider is overloaded or failing; try again shortly",
    LLMBadRequestError: "The model provider rejected the request",
    LLMResponseError: "The model provider sent an error",
}


class AnthropicProvider:
    """Streams and completes Messages API calls; see ``Provider`` for the contract."""

    name = "anthropic"

    def __init__(
        self, *, api_key: str, base_url: str | None = None, max_retries: int = 2, timeout: float = 600.0
    ) -> None:
        self._api_key = api_key
        self.base_url = base_url or None  # None: the SDK's default endpoint
        self.max_retries = max_retries
        self.timeout = timeout
        self._async_clients: dict[asyncio.AbstractEventLoop, tuple[anthropic.AsyncAnthropic, AsyncGenerator]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={self.base_url!r}, max_retries={self.max_retries})"

    @cached_property
    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            **self._client_options(), http_client=anthropic.DefaultHttpxClient(verify=_tls_context())
        )

    async def async_client(self) -> anthropic.AsyncAnthropic:
        """The running loop's client, on aiohttp: its connections belong to that loop
        and stay open between turns (no new TLS handshake per model call).

        aiohttp rather than the SDK's default httpx transport: reading a streamed
        answer costs about half the CPU per event (bench/turns.py), which is what
        bounds how many answers one server process can stream at once. The client
        is closed when its loop shuts down (``asyncio.run``, test loops).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._async_clients.get(loop)
            if entry is not None:
                return entry[0]
            for old in [old for old in self._async_clients if old.is_closed()]:
                del self._async_clients[old]
            client = anthropic.AsyncAnthropic(
                **self._client_options(), http_client=anthropic.DefaultAioHttpClient(verify=_tls_context())
            )
            closer = _close_at_loop_shutdown(client)
            self._async_clients[loop] = (client, closer)
        await anext(closer)  # the loop now tracks it, and closes it in shutdown_asyncgens
        return client

    def close(self) -> None:
        """Close the synchronous client's connections. (Each async client is
        closed when its event loop shuts down.)"""
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()

    def _client_options(self) -> dict:
        return {
            "api_key": self._api_key,
            "base_url": self.base_url,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
        }

    # Streams go through the SDK (auth, retries, HTTP errors, connections) as a
    # raw streaming response whose SSE we decode ourselves: see StreamAssembler.

    def stream(self, request: LLMRequest) -> Iterator[StreamEvent]:
        assembler = StreamAssembler()
        try:
            with self.client.messages.with_streaming_response.create(**build_params(request), stream=True) as response:
                for event in sse_data(response.iter_bytes()):
                    yield from assembler.feed(event)
        except (anthropic.AnthropicError, httpx2.HTTPError, StreamError) as err:
            raise self._typed(err) from None
        assembler.finish()

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        assembler = StreamAssembler()
        try:
            client = await self.async_client()
            async with client.messages.with_streaming_response.create(**build_params(request), stream=True) as response:
                # The decoded bytes straight from the HTTP response, split into
                # events here: two async generators fewer per event than the
                # SDK's iter_bytes wrapped in an async SSE splitter.
                events = SSEBuffer()
                body = response.http_response.aiter_bytes()
                async for chunk in body:
                    for event in events.push(chunk):
                        for typed in assembler.feed(event):
                            if isinstance(typed, MessageStop):
                                await _read_to_end(body)
                            yield typed
        except (anthropic.AnthropicError, httpx2.HTTPError, StreamError) as err:
            raise self._typed(err) from None
        assembler.finish()

    def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            message = self.client.messages.create(**build_params(request))
        except (anthropic.AnthropicError, httpx2.HTTPError) as err:
            raise self._typed(err) from None
        return response_from_message(message)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        try:
            message = await (await self.async_client()).messages.create(**build_params(request))
        except (anthropic.AnthropicError, httpx2.HTTPError) as err:
            raise self._typed(err) from None
        return response_from_message(message)

    def _typed(self, err: Exception) -> LLMError:
        typed = typed_error(err, secret=self._api_key, host=urlsplit(self.base_url or "").hostname)
        logger.warning("anthropic call failed: %s (%s)", type(err).__name__, typed.message)
        return typed


# How long to wait, after message_stop, for the end of the HTTP body.
END_OF_BODY_SECONDS = 1.0


async def _read_to_end(body: AsyncIterator[bytes]) -> None:
    """Read the rest of a streamed response, after its message_stop.

    Callers stop reading at the final event, and a response closed before
    its body ended takes its connection with it: every model call would then
    open a new connection (and, to the real API, do a new TLS handshake).
    What follows message_stop is normally just the end of the chunked body,
    already on its way; a server that keeps the stream open past
    ``END_OF_BODY_SECONDS`` costs its connection, nothing more.
    """
    try:
        async with asyncio.timeout(END_OF_BODY_SECONDS):
            async for _ in body:
                pass
    except (TimeoutError, httpx2.HTTPError):
        pass  # the answer is whole; only the connection is lost


async def _close_at_loop_shutdown(client: anthropic.AsyncAnthropic) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.close()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every client: loading the CA bundle costs ~20 ms of CPU,
    which the SDK would otherwise spend on the event loop for each new client."""
    return httpcore2.default_ssl_context()


def warm_up() -> None:
    """Load now what the first model call of a process would load on the event loop:
    the CA bundle, and the OpenTelemetry propagators the SDK imports when it first
    builds a request's trace headers (entry points scanned from disk)."""
    _tls_context()
    try:
        from anthropic._tracing import trace_context_injector
    except ImportError:  # an SDK without tracing: nothing to load
        return
    trace_context_injector()


def typed_error(err: Exception, *, secret: str = "", host: str | None = None) -> LLMError:
    """The LLMError for an SDK, transport or stream exception; its message never holds ``secret``."""
    if isinstance(err, StreamError):
        error_class = _BY_ERROR_TYPE.get(err.error_type, LLMResponseError)
        detail = _redact(err.message, secret)[:_DETAIL_LIMIT]
        return error_class(
            f"{_SUMMARY[error_class]} ({err.error_type or 'error'})" + (f": {detail}" if detail else ".")
        )
    if isinstance(err, (anthropic.APITimeoutError, httpx2.TimeoutException)):
        return LLMConnectionError("The model provider did not answer in time.")
    if isinstance(err, (anthropic.APIConnectionError, httpx2.HTTPError)):
        where = f" at {host}" if host else ""
        return LLMConnectionError(f"Could not reach the model provider{where}.")
    if not isinstance(err, anthropic.APIStatusError):
        return LLMError(f"The model call failed unexpectedly ({type(err).__name__}).")
    error_class = _class_for(err.status_code, err.type)
    detail = _redact(str(err.api_message or err.type or ""), secret)[:_DETAIL_LIMIT]
    label = " ".join(str(part) for part in (err.status_code if err.status_code != 200 else "", err.type) if part)
    message = f"{_SUMMARY[error_class]} ({label})" + (f": {detail}" if detail and detail != err.type else ".")
    too_long = _TOO_LONG.search(str(err.api_message or ""))
    if error_class is LLMBadRequestError and too_long:
        tokens, limit = (int(n) if n else None for n in too_long.group("tokens", "limit"))
        return LLMContextTooLongError(
            message, prompt_tokens=tokens, limit=limit, status=err.status_code, request_id=err.request_id
        )
    return error_class(message, status=err.status_code, request_id=err.request_id)


def _class_for(status: int, error_type: str | None) -> type[LLMError]:
    if status in (401, 403):
        return LLMAuthError
    if status == 408:
        return LLMConnectionError
    if status == 429:
        return LLMRateLimitError
    if status >= 500:
        return LLMOverloadedError
    if status == 200:  # an `error` event after the stream had started
        return _BY_ERROR_TYPE.get(error_type or "", LLMResponseError)
    return LLMBadRequestError


def _redact(text: str, secret: str) -> str:
    if secret:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("sk-ant-***", text)

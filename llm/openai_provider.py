"""OpenAIProvider (Chat Completions) and OpenAIResponsesProvider (the Responses API)
through the official ``openai`` SDK.

For any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenRouter, Azure,
OpenAI itself): the row's ``base_url`` names it. Imported only by the role
factory that builds one (the SDK takes seconds to import on a loaded machine).
The two differ only in the endpoint, how a request is written and how the
answer is read: the rest (clients, retries, errors) is one code.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from llm.anthropic_provider import _class_for, _close_at_loop_shutdown, _read_to_end, _tls_context
from llm.anthropic_stream import SSEBuffer, StreamError, sse_data
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
from llm.openai_request import ToolNames, build_chat_params, token_limit_parameter
from llm.openai_stream import ChatStreamAssembler, response_from_completion
from llm.responses_request import build_responses_params
from llm.responses_stream import ResponsesStreamAssembler, response_from_body
from llm.types import LLMRequest, LLMResponse, MessageStop, StreamEvent

logger = logging.getLogger("eunice.llm")

# A local server needs no key, but the SDK refuses to start without one.
NO_KEY = "no-key"
_KEY_PATTERN = re.compile(r"sk-[A-Za-z0-9_\-]{8,}")
_DETAIL_LIMIT = 300
# "This model's maximum context length is 8192 tokens. However, your messages resulted in
# 9000 tokens" (OpenAI), "... However, you requested 9000 tokens (...)" (vLLM).
_TOO_LONG = re.compile(
    r"maximum context length is (?P<limit>\d+) tokens.*?(?:resulted in|requested) (?P<tokens>\d+) tokens",
    re.IGNORECASE | re.DOTALL,
)
_BY_ERROR_TYPE: dict[str, type[LLMError]] = {
    "invalid_request_error": LLMBadRequestError,
    "authentication_error": LLMAuthError,
    "rate_limit_exceeded": LLMRateLimitError,
    "insufficient_quota": LLMRateLimitError,
    "server_error": LLMOverloadedError,
}
_SUMMARY: dict[type[LLMError], str] = {
    LLMConnectionError: "The model provider timed out",
    LLMAuthError: "The model provider refused the API key; check the model's API key variable",
    LLMRateLimitError: "The model provider's rate limit was reached; try again shortly",
    LLMOverloadedError: "The model provider is overloaded or failing; try again shortly",
    LLMBadRequestError: "The model provider rejected the request",
    LLMResponseError: "The model provider sent an error",
}


class OpenAIProvider:
    """Streams and completes Chat Completions calls; see ``Provider`` for the contract."""

    name = "openai"

    def __init__(
        self, *, api_key: str = "", base_url: str | None = None, max_retries: int = 2, timeout: float = 600.0
    ) -> None:
        self._api_key = api_key or NO_KEY
        self.base_url = base_url or None  # None: the SDK's default endpoint (api.openai.com)
        self._token_limit = token_limit_parameter(self.base_url)
        self.max_retries = max_retries
        self.timeout = timeout
        self._async_clients: dict[asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, AsyncGenerator]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIProvider(base_url={self.base_url!r}, max_retries={self.max_retries})"

    @cached_property
    def client(self) -> openai.OpenAI:
        return openai.OpenAI(**self._client_options(), http_client=openai.DefaultHttpxClient(verify=_tls_context()))

    async def async_client(self) -> openai.AsyncOpenAI:
        """The running loop's client, on aiohttp, closed when its loop shuts down
        (as AnthropicProvider.async_client, for the same reasons)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._async_clients.get(loop)
            if entry is not None:
                return entry[0]
            for old in [old for old in self._async_clients if old.is_closed()]:
                del self._async_clients[old]
            client = openai.AsyncOpenAI(
                **self._client_options(), http_client=openai.DefaultAioHttpClient(verify=_tls_context())
            )
            closer = _close_at_loop_shutdown(client)  # type: ignore[arg-type]
            self._async_clients[loop] = (client, closer)
        await anext(closer)
        return client

    def close(self) -> None:
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()

    def _client_options(self) -> dict[str, Any]:
        return {
            "api_key": self._api_key,
            "base_url": self.base_url,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
        }

    # As for Anthropic: the SDK does auth, retries, HTTP errors and connections;
    # the streamed chunks are decoded here (no pydantic model per chunk).

    # The API's endpoint, request and answer: what OpenAIResponsesProvider replaces.

    def _endpoint(self, client: openai.OpenAI | openai.AsyncOpenAI) -> Any:
        return client.chat.completions

    def _params(self, request: LLMRequest, *, stream: bool) -> tuple[dict[str, Any], ToolNames]:
        return build_chat_params(request, stream=stream, token_limit=self._token_limit)

    def _assembler(self, names: ToolNames) -> ChatStreamAssembler | ResponsesStreamAssembler:
        return ChatStreamAssembler(names)

    def _response(self, body: dict[str, Any], names: ToolNames) -> LLMResponse:
        return response_from_completion(body, names)

    def stream(self, request: LLMRequest) -> Iterator[StreamEvent]:
        params, names = self._params(request, stream=True)
        assembler = self._assembler(names)
        try:
            with self._endpoint(self.client).with_streaming_response.create(**params) as response:
                for chunk in sse_data(response.iter_bytes()):
                    yield from assembler.feed(chunk)
            yield from assembler.end()
        except (openai.OpenAIError, httpx2.HTTPError, StreamError) as err:
            raise self._typed(err) from None

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        params, names = self._params(request, stream=True)
        assembler = self._assembler(names)
        try:
            client = await self.async_client()
            async with self._endpoint(client).with_streaming_response.create(**params) as response:
                chunks = SSEBuffer()
                body = response.http_response.aiter_bytes()
                async for data in body:
                    for chunk in chunks.push(data):
                        for typed in assembler.feed(chunk):
                            if isinstance(typed, MessageStop):
                                await _read_to_end(body)
                            yield typed
                    if assembler.finished:
                        break
            for typed in assembler.end():
                yield typed
        except (openai.OpenAIError, httpx2.HTTPError, StreamError) as err:
            raise self._typed(err) from None

    def complete(self, request: LLMRequest) -> LLMResponse:
        params, names = self._params(request, stream=False)
        try:
            body = self._endpoint(self.client).with_raw_response.create(**params).http_response.json()
        except (openai.OpenAIError, httpx2.HTTPError) as err:
            raise self._typed(err) from None
        return self._response(body, names)

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        params, names = self._params(request, stream=False)
        try:
            raw = await self._endpoint(await self.async_client()).with_raw_response.create(**params)
            body = raw.http_response.json()
        except (openai.OpenAIError, httpx2.HTTPError) as err:
            raise self._typed(err) from None
        return self._response(body, names)

    def _typed(self, err: Exception) -> LLMError:
        typed = typed_error(err, secret=self._api_key, host=urlsplit(self.base_url or "").hostname)
        logger.warning("openai-compatible call failed: %s (%s)", type(err).__name__, typed.message)
        return typed


class OpenAIResponsesProvider(OpenAIProvider):
    """The Responses API (``POST /v1/responses``): OpenAI's own, and servers that implement
    it. It delivers the hosted web search (``llm.capabilities``)."""

    name = "openai_responses"

    def __repr__(self) -> str:
        return f"OpenAIResponsesProvider(base_url={self.base_url!r}, max_retries={self.max_retries})"

    def _endpoint(self, client: openai.OpenAI | openai.AsyncOpenAI) -> Any:
        return client.responses

    def _params(self, request: LLMRequest, *, stream: bool) -> tuple[dict[str, Any], ToolNames]:
        return build_responses_params(request, stream=stream)

    def _assembler(self, names: ToolNames) -> ChatStreamAssembler | ResponsesStreamAssembler:
        return ResponsesStreamAssembler(names)

    def _response(self, body: dict[str, Any], names: ToolNames) -> LLMResponse:
        return response_from_body(body, names)


def typed_error(err: Exception, *, secret: str = "", host: str | None = None) -> LLMError:
    """The LLMError for an SDK, transport or stream exception; its message never holds ``secret``."""
    if isinstance(err, StreamError):
        error_class = _BY_ERROR_TYPE.get(err.error_type, LLMResponseError)
        detail = _redact(err.message, secret)[:_DETAIL_LIMIT]
        return error_class(
            f"{_SUMMARY[error_class]} ({err.error_type or 'error'})" + (f": {detail}" if detail else ".")
        )
    if isinstance(err, (openai.APITimeoutError, httpx2.TimeoutException)):
        return LLMConnectionError("The model provider did not answer in time.")
    if isinstance(err, (openai.APIConnectionError, httpx2.HTTPError)):
        where = f" at {host}" if host else ""
        return LLMConnectionError(f"Could not reach the model provider{where}.")
    if not isinstance(err, openai.APIStatusError):
        return LLMError(f"The model call failed unexpectedly ({type(err).__name__}).")
    kind = str(err.code or err.type or "")
    error_class = _class_for(err.status_code, kind)
    api_message = _api_message(err)
    detail = _redact(api_message, secret)[:_DETAIL_LIMIT]
    label = " ".join(str(part) for part in (err.status_code, kind) if part)
    message = f"{_SUMMARY[error_class]} ({label})" + (f": {detail}" if detail else ".")
    too_long = _TOO_LONG.search(api_message)
    if error_class is LLMBadRequestError and (too_long or kind == "context_length_exceeded"):
        tokens, limit = (int(n) for n in too_long.group("tokens", "limit")) if too_long else (None, None)
        return LLMContextTooLongError(
            message, prompt_tokens=tokens, limit=limit, status=err.status_code, request_id=err.request_id
        )
    return error_class(message, status=err.status_code, request_id=err.request_id)


def _api_message(err: openai.APIStatusError) -> str:
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return ""


def _redact(text: str, secret: str) -> str:
    if secret and secret != NO_KEY:
        text = text.replace(secret, "***")
    return _KEY_PATTERN.sub("sk-***", text)

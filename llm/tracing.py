"""A ``chat {gen_ai.request.model}`` span around every model call, on the GenAI conventions.

``traced`` wraps a provider while ``eunice.telemetry`` is on (``create_llm_client_for_role``
asks it for every client it makes); the wrapper is a provider like any other, so no caller
knows. Each of its four calls is one CLIENT span, from the request to the response's last
event, with the request's model and limits, the response's id, model and finish reason,
and its token usage: ``gen_ai.usage.input_tokens`` counts every input token, the cached
reads and writes among them (as the conventions ask of Anthropic's usage), with those two
also on their own (``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens``). A typed LLMError sets ``error.type`` to its
class. The ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage`` metrics
are recorded with it. Message content is never put on these spans.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any
from urllib.parse import urlsplit

from eunice.telemetry import state
from llm.provider import Provider
from llm.types import LLMRequest, LLMResponse, MessageStop, StreamEvent


def traced(provider: Provider) -> Provider:
    """``provider`` with chat spans while telemetry is on; itself otherwise, and for the
    offline provider, which calls no model."""
    if not state.on or provider.name == "offline":
        return provider
    return TracedProvider(provider)


class TracedProvider:
    """A provider whose calls each make a chat span; everything else is the wrapped one's."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:  # base_url, close, runs_the_persons_commands, …
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"TracedProvider({self.inner!r})"

    def stream(self, request: LLMRequest) -> Iterator[StreamEvent]:
        call = _ChatCall(self.inner, request)
        try:
            for event in self.inner.stream(request):
                if isinstance(event, MessageStop):
                    call.response = event.response
                yield event
        except BaseException as exc:
            call.end(exc)
            raise
        call.end()

    async def astream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        call = _ChatCall(self.inner, request)
        try:
            async for event in self.inner.astream(request):
                if isinstance(event, MessageStop):
                    call.response = event.response
                yield event
        except BaseException as exc:
            call.end(exc)
            raise
        call.end()

    def complete(self, request: LLMRequest) -> LLMResponse:
        call = _ChatCall(self.inner, request)
        try:
            with call.current():  # the SDK's own API-call span joins this one
                call.response = self.inner.complete(request)
        except BaseException as exc:
            call.end(exc)
            raise
        call.end()
        return call.response

    async def acomplete(self, request: LLMRequest) -> LLMResponse:
        call = _ChatCall(self.inner, request)
        try:
            with call.current():
                call.response = await self.inner.acomplete(request)
        except BaseException as exc:
            call.end(exc)
            raise
        call.end()
        return call.response


class _ChatCall:
    """One model call's span and metrics, from its request to its end."""

    __slots__ = ("span", "started", "response", "metric")

    def __init__(self, provider: Provider, request: LLMRequest) -> None:
        from opentelemetry.trace import SpanKind

        self.metric: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider.name,
            "gen_ai.request.model": request.model,
        }
        attributes: dict[str, Any] = {**self.metric, "gen_ai.request.max_tokens": request.max_tokens}
        if request.temperature is not None:
            attributes["gen_ai.request.temperature"] = request.temperature
        if request.stop_sequences:
            attributes["gen_ai.request.stop_sequences"] = list(request.stop_sequences)
        attributes.update(_server(getattr(provider, "base_url", None)))
        assert state.tracer is not None
        self.span = state.tracer.start_span(f"chat {request.model}", kind=SpanKind.CLIENT, attributes=attributes)
        self.started = time.perf_counter()
        self.response: LLMResponse | None = None

    def current(self) -> AbstractContextManager[Any]:
        from opentelemetry.trace import use_span

        return use_span(self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False)

    def end(self, error: BaseException | None = None) -> None:
        """End the span: with the response's usage, or with ``error`` (or a stream cut off)."""
        from opentelemetry.trace import Status, StatusCode

        span, response = self.span, self.response
        if response is not None:
            usage = response.usage
            span.set_attributes(
                {
                    "gen_ai.response.model": response.model,
                    "gen_ai.response.finish_reasons": [response.stop_reason],
                    "gen_ai.usage.input_tokens": usage.total_input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
                    "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
                }
            )
            if response.id:
                span.set_attribute("gen_ai.response.id", response.id)
            self._record_tokens(response)
        if error is not None or response is None:
            error_type = "NoResponse" if error is None else _CANCELS.get(type(error), type(error).__name__)
            self.metric["error.type"] = error_type
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, str(error)[:500] if error is not None else "no response"))
        span.end()
        assert state.chat_duration is not None
        state.chat_duration.record(time.perf_counter() - self.started, self.metric)

    def _record_tokens(self, response: LLMResponse) -> None:
        assert state.token_usage is not None
        usage = response.usage
        metric = {**self.metric, "gen_ai.response.model": response.model}
        state.token_usage.record(usage.total_input_tokens, {**metric, "gen_ai.token.type": "input"})
        state.token_usage.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})


# The caller stopped reading (a cancel), so no answer came: not the provider's error.
_CANCELS = {GeneratorExit: "Cancelled", asyncio.CancelledError: "Cancelled"}


def _server(base_url: str | None) -> dict[str, Any]:
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    found: dict[str, Any] = {"server.address": parts.hostname} if parts.hostname else {}
    if parts.port:
        found["server.port"] = parts.port
    return found


def invoke_agent(agent: str, *, model: str, conversation_id: str, tenant_id: str) -> AbstractContextManager[Any]:
    """An ``invoke_agent {agent}`` span made current for a turn (the model calls and tool
    calls it makes are its children, one trace per turn); nothing while telemetry is off."""
    if not state.on:
        return nullcontext()
    from opentelemetry.trace import SpanKind, use_span

    assert state.tracer is not None
    span = state.tracer.start_span(
        f"invoke_agent {agent}",
        kind=SpanKind.INTERNAL,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": conversation_id,
            "eunice.tenant.id": tenant_id,
        },
    )
    return use_span(span, end_on_exit=True, record_exception=False)

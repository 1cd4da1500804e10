"""Every model call is one ``chat {model}`` span with its token usage, cache reads and writes included."""

import asyncio

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from llm import LLMOverloadedError
from llm.tracing import TracedProvider, traced
from tests.llm.conftest import request

USAGE = {"input_tokens": 12, "output_tokens": 7, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}


def test_a_streamed_answer_is_one_chat_span_with_its_usage(otel, scripted, provider_for):
    server = scripted([{"text": "Hello there", "usage": USAGE}])
    provider = traced(provider_for(server))
    events = list(provider.stream(request("Hi")))

    span = otel.span("chat claude-test")
    assert span.kind is SpanKind.CLIENT
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["gen_ai.request.model"] == "claude-test"
    assert span.attributes["gen_ai.request.max_tokens"] == 256
    assert span.attributes["gen_ai.usage.input_tokens"] == 12 + 300 + 40, "every input token, cached ones too"
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 300
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 40
    assert span.attributes["gen_ai.usage.output_tokens"] == 7
    assert span.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert span.attributes["gen_ai.response.id"] == events[-1].response.id
    assert span.attributes["server.address"] == "127.0.0.1"
    assert span.status.status_code is StatusCode.UNSET
    assert "Hello there" not in str(dict(span.attributes)), "no message content on chat spans"


def test_an_async_call_and_a_complete_are_spans_too(otel, scripted, provider_for):
    server = scripted([{"text": "one", "usage": USAGE}, {"text": "two", "usage": USAGE}])
    provider = traced(provider_for(server))

    async def stream_it() -> None:
        async for _ in provider.astream(request("Hi")):
            pass

    asyncio.run(stream_it())
    provider.complete(request("Again"))
    spans = otel.spans("chat ")
    assert len(spans) == 2
    assert all(s.attributes["gen_ai.usage.cache_read.input_tokens"] == 300 for s in spans)


def test_a_failed_call_sets_error_type_to_the_typed_error(otel, scripted, provider_for):
    server = scripted([{"error": {"status": 529, "type": "overloaded_error", "message": "busy"}}])
    provider = traced(provider_for(server))
    with pytest.raises(LLMOverloadedError):
        list(provider.stream(request("Hi")))

    span = otel.span("chat claude-test")
    assert span.attributes["error.type"] == "LLMOverloadedError"
    assert span.status.status_code is StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in span.attributes


def test_token_usage_and_duration_metrics_are_recorded(otel, scripted, provider_for):
    server = scripted([{"text": "ok", "usage": USAGE}])
    traced(provider_for(server)).complete(request("Hi"))

    tokens = {p.attributes["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")}
    assert tokens["input"].sum == 352 and tokens["output"].sum == 7
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.attributes["gen_ai.request.model"] == "claude-test"


def test_with_telemetry_off_a_role_client_is_the_provider_itself(settings):
    from llm.models import ModelConfig
    from llm.roles import create_llm_client_for_role

    settings.ANTHROPIC_API_KEY = "sk-ant-test-0123456789abcdef"
    config = ModelConfig(role="chat", provider="anthropic", model="claude-test", capabilities={}, is_active=True)
    assert not isinstance(create_llm_client_for_role("chat", model=config), TracedProvider)


def test_a_role_client_is_traced_while_telemetry_is_on(otel, settings):
    from llm.models import ModelConfig
    from llm.roles import create_llm_client_for_role

    settings.ANTHROPIC_API_KEY = "sk-ant-test-0123456789abcdef"
    config = ModelConfig(role="chat", provider="anthropic", model="claude-test", capabilities={}, is_active=True)
    client = create_llm_client_for_role("chat", model=config)
    assert isinstance(client, TracedProvider) and client.name == "anthropic"
    offline = ModelConfig(role="chat", provider="offline", model="offline", capabilities={}, is_active=True)
    assert not isinstance(create_llm_client_for_role("chat", model=offline), TracedProvider), "calls no model"

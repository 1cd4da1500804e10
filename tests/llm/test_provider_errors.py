import socket

import pytest

from llm import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMResponseError,
    TextDelta,
)
from llm.anthropic_provider import AnthropicProvider
from tests.llm.conftest import TEST_KEY, request

OVERLOADED = {"status": 529, "type": "overloaded_error", "message": "Overloaded"}


def test_an_overloaded_response_becomes_a_retryable_typed_error(scripted, provider_for):
    server = scripted([{"error": OVERLOADED}])
    with pytest.raises(LLMOverloadedError) as info:
        list(provider_for(server).stream(request("Hi")))
    assert info.value.retryable is True
    assert info.value.status == 529
    assert "overloaded" in str(info.value)


def test_a_refused_key_becomes_an_auth_error_that_never_shows_the_key(scripted, provider_for):
    # A hostile or careless endpoint echoes the key back in its message.
    server = scripted([{"error": {"status": 401, "type": "authentication_error", "message": "bad key {api_key}"}}])
    with pytest.raises(LLMAuthError) as info:
        provider_for(server).complete(request("Hi"))
    assert server.requests[0].api_key == TEST_KEY, "the key was really sent"
    assert TEST_KEY not in str(info.value) and TEST_KEY not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert info.value.retryable is False
    assert "ANTHROPIC_API_KEY" in str(info.value)


def test_a_server_that_requires_another_key_answers_401(scripted, provider_for):
    server = scripted([{"text": "never sent"}], api_key="sk-ant-the-right-one")
    with pytest.raises(LLMAuthError):
        provider_for(server).complete(request("Hi"))
    assert server.turns_left == 1


def test_the_provider_never_shows_its_key_in_its_repr():
    assert TEST_KEY not in repr(AnthropicProvider(api_key=TEST_KEY, base_url="http://127.0.0.1:9"))


def test_a_rate_limit_is_retried_by_the_sdk_and_then_succeeds(scripted, provider_for):
    rate_limited = {
        "status": 429,
        "type": "rate_limit_error",
        "message": "slow down",
        "headers": {"retry-after-ms": "1"},
    }
    server = scripted([{"error": rate_limited}, {"text": "ok"}])
    assert provider_for(server, max_retries=1).complete(request("Hi")).text == "ok"
    assert len(server.requests) == 2


def test_a_rate_limit_that_outlasts_the_retries_is_a_typed_rate_limit_error(scripted, provider_for):
    rate_limited = {
        "status": 429,
        "type": "rate_limit_error",
        "message": "slow down",
        "headers": {"retry-after-ms": "1"},
    }
    server = scripted([{"error": rate_limited}, {"error": rate_limited}])
    with pytest.raises(LLMRateLimitError):
        provider_for(server, max_retries=1).complete(request("Hi"))
    assert len(server.requests) == 2


def test_a_bad_request_is_not_retryable_and_says_why(scripted, provider_for):
    server = scripted([{"error": {"status": 400, "type": "invalid_request_error", "message": "max_tokens: too large"}}])
    with pytest.raises(LLMBadRequestError, match="max_tokens: too large") as info:
        provider_for(server, max_retries=2).complete(request("Hi"))
    assert info.value.retryable is False
    assert len(server.requests) == 1


def test_an_error_event_in_the_middle_of_a_stream_is_typed(scripted, provider_for):
    server = scripted([{"text": ["partial"], "stream_error": OVERLOADED}])
    seen = []
    with pytest.raises(LLMOverloadedError):
        for event in provider_for(server).stream(request("Hi")):
            seen.append(event)
    assert [e.text for e in seen if isinstance(e, TextDelta)] == ["partial"]


def test_an_unreachable_provider_is_a_connection_error():
    with socket.socket() as sock:  # bound and held, never listening: nobody can answer on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        provider = AnthropicProvider(api_key=TEST_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)
        with pytest.raises(LLMConnectionError, match="Could not reach the model provider at 127.0.0.1") as info:
            provider.complete(request("Hi"))
    assert info.value.retryable is True


def test_tool_input_that_is_not_a_json_object_is_a_response_error():
    from llm.anthropic_stream import _tool_input

    with pytest.raises(LLMResponseError, match="not a JSON object"):
        _tool_input("plan", "[1, 2]")
    with pytest.raises(LLMResponseError, match="unreadable input for tool 'plan'"):
        _tool_input("plan", '{"a": ')


def test_a_request_timeout_from_the_server_is_a_retryable_connection_error(scripted, provider_for):
    server = scripted([{"error": {"status": 408, "type": "timeout_error", "message": "Request timed out"}}])
    with pytest.raises(LLMConnectionError, match="timed out") as info:
        provider_for(server).complete(request("Hi"))
    assert info.value.retryable is True

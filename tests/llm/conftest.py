"""The scripted Messages API server and an Anthropic provider pointed at it.

Every test here talks HTTP to a local scripted server through the real
``anthropic`` SDK; nothing can reach a hosted model.
"""

from __future__ import annotations

import anthropic
import pytest

from llm import CURRENT_STATE_MARKER, LLMRequest
from llm.anthropic_provider import AnthropicProvider
from llm.scripted import ScriptedChatCompletionsServer, ScriptedMessagesServer, ScriptedResponsesServer

TEST_KEY = "sk-ant-test-0123456789abcdef"
OPENAI_TEST_KEY = "sk-test-openai-0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_hosted_model(monkeypatch):
    """The SDK reads these itself when not given a value: keep a developer's shell out."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
        "EUNICE_DEFAULT_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


def _started(server_class):
    """A fixture body: ``start(turns, **options)`` makes a started ``server_class``; each is
    stopped, and checked for failures (a broken rule, a missed expectation), at teardown."""
    servers = []

    def start(turns, **options):
        server = server_class(turns, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    for server in servers:
        assert server.failures == [], server.failures


@pytest.fixture
def scripted():
    """scripted(turns, **options) -> a started Messages API server."""
    yield from _started(ScriptedMessagesServer)


@pytest.fixture
def scripted_chat():
    """scripted_chat(turns, **options) -> a started OpenAI-compatible (Chat Completions) server."""
    yield from _started(ScriptedChatCompletionsServer)


@pytest.fixture
def scripted_responses():
    """scripted_responses(turns, **options) -> a started Responses API server."""
    yield from _started(ScriptedResponsesServer)


@pytest.fixture
def openai_provider_for():
    """openai_provider_for(server, **options) -> an OpenAIProvider that talks to ``server``."""
    from llm.openai_provider import OpenAIProvider

    providers: list[OpenAIProvider] = []

    def make(server: ScriptedChatCompletionsServer, **options) -> OpenAIProvider:
        options = {"api_key": OPENAI_TEST_KEY, "max_retries": 0, **options}
        providers.append(OpenAIProvider(base_url=server.url, **options))
        return providers[-1]

    yield make
    for provider in providers:
        provider.close()


@pytest.fixture
def responses_provider_for():
    """responses_provider_for(server, **options) -> an OpenAIResponsesProvider that talks to ``server``."""
    from llm.openai_provider import OpenAIResponsesProvider

    providers: list[OpenAIResponsesProvider] = []

    def make(server: ScriptedResponsesServer, **options) -> OpenAIResponsesProvider:
        options = {"api_key": OPENAI_TEST_KEY, "max_retries": 0, **options}
        providers.append(OpenAIResponsesProvider(base_url=server.url, **options))
        return providers[-1]

    yield make
    for provider in providers:
        provider.close()


@pytest.fixture
def provider_for():
    """provider_for(server, **options) -> an AnthropicProvider that talks to ``server``."""

    providers: list[AnthropicProvider] = []

    def make(server: ScriptedMessagesServer, **options) -> AnthropicProvider:
        provider = AnthropicProvider(api_key=TEST_KEY, base_url=server.url, **{"max_retries": 0, **options})
        providers.append(provider)
        return provider

    yield make
    for provider in providers:  # the server keeps connections open, as the real API does
        provider.close()


@pytest.fixture
def client_for():
    """client_for(server) -> an ``anthropic.Anthropic`` client for ``server``, closed at teardown."""
    clients: list[anthropic.Anthropic] = []

    def make(server: ScriptedMessagesServer) -> anthropic.Anthropic:
        clients.append(anthropic.Anthropic(api_key=TEST_KEY, base_url=server.url, max_retries=0))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


def request(*messages, system="You are Eunice.", tools=(), **fields) -> LLMRequest:
    """A small request; plain strings become user messages."""
    history = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages] or [
        {"role": "user", "content": "Hello"}
    ]
    fields.setdefault("max_tokens", 256)
    return LLMRequest(model="claude-test", system=system, messages=history, tools=list(tools), **fields)


def state_block(text: str = "turn 1") -> dict:
    return {"type": "text", "text": f"{CURRENT_STATE_MARKER}\n{text}"}

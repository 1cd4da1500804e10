"""Which model serves a role, and the provider client for it.

A role (``chat``, ``delegate``, ``tool_builder``, …) is served by its active
ModelConfig row. A role without one borrows the row of the role it falls
back to (``FALLBACKS``: a delegated task runs on the chat model unless
``delegate`` has a row of its own). Failing that, the built-in default comes
from the environment:
``EUNICE_DEFAULT_MODEL`` when set, else ``ANTHROPIC_DEFAULT_MODEL`` when
``ANTHROPIC_API_KEY`` is set, else the offline provider. The built-in default
is an unsaved ModelConfig, so its token limit and prices are the model's
field defaults rather than numbers repeated here.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.conf import settings

from eunice.db.prepared import Prepared
from llm.errors import LLMConfigError, RoleOffline
from llm.models import API_KEY_VARIABLE, ModelConfig
from llm.offline import MODEL_NAME as OFFLINE_MODEL
from llm.offline import OfflineProvider
from llm.provider import Provider
from llm.tracing import traced

if TYPE_CHECKING:  # each SDK costs a second of start-up: imported when its provider is made
    from llm.anthropic_provider import AnthropicProvider
    from llm.openai_provider import OpenAIProvider


# The roles the product asks for, and what each serves (the admin lists them); call_llm
# may name any other role a row is made for.
ROLES: dict[str, str] = {
    "chat": "the conversation's agent",
    "delegate": "tasks the agent delegates (delegate, delegate_batch); falls back to chat",
    "tool_builder": "drafts custom tools",
    "tool_auditor": "reviews drafted custom tools",
    "insight": "classifies documents and extracts fields (classify_document, extract_document, "
    "process_document); falls back to chat",
}
# A role without an active row of its own uses this role's row.
FALLBACKS: dict[str, str] = {"delegate": "chat", "insight": "chat"}


def get_model_for_role(role: str) -> ModelConfig:
    """The role's active ModelConfig row, else its fallback role's, else the built-in default (unsaved).
    One query, composed once per number of candidate roles (every turn reads it)."""
    return _chosen(role, _ACTIVE_ROWS(*_candidates(role)))


# The active rows of one role or of a role and its fallback (``_candidates``).
_ACTIVE_ROWS: Prepared[ModelConfig] = Prepared(
    lambda *roles: ModelConfig.objects.filter(role__in=roles, is_active=True)
)


async def aget_model_for_role(role: str) -> ModelConfig:
    """``get_model_for_role`` for async callers."""
    return _chosen(role, [row async for row in ModelConfig.objects.filter(role__in=_candidates(role), is_active=True)])


def _candidates(role: str) -> list[str]:
    return [role, FALLBACKS[role]] if role in FALLBACKS else [role]


def _chosen(role: str, rows: list[ModelConfig]) -> ModelConfig:
    by_role = {row.role: row for row in rows}
    for candidate in _candidates(role):
        if candidate in by_role:
            return by_role[candidate]
    return default_model(role)


def default_model(role: str) -> ModelConfig:
    """The model a role uses when it has no active row, chosen from the environment."""
    if settings.EUNICE_DEFAULT_MODEL:
        provider, model = settings.EUNICE_DEFAULT_MODEL
    elif settings.ANTHROPIC_API_KEY:
        provider, model = "anthropic", settings.ANTHROPIC_DEFAULT_MODEL
    else:
        provider, model = "offline", OFFLINE_MODEL
    return ModelConfig(role=role, provider=provider, model=model, capabilities={}, is_active=True)


def create_llm_client_for_role(role: str, *, model: ModelConfig | None = None) -> Provider:
    """The provider client for ``role`` (pass ``model`` when already looked up).

    Raises LLMConfigError when the row names a provider this build does not have.
    """
    config = model if model is not None else get_model_for_role(role)
    factory = PROVIDERS.get(config.provider)
    if factory is None:
        raise LLMConfigError(
            f"The model for role {config.role!r} names an unknown provider {config.provider!r}; "
            f"use one of {', '.join(sorted(PROVIDERS))}."
        )
    return traced(factory(config))


def callable_model_for_role(role: str) -> tuple[ModelConfig, Provider]:
    """The role's model row and a client that reaches a real model, for work the offline
    provider cannot do (building a tool, an answer as structured data).

    Raises RoleOffline with the reason when the role would fall back to the offline
    provider, LLMConfigError when its row names an unknown provider.
    """
    config = get_model_for_role(role)
    client = create_llm_client_for_role(role, model=config)
    if isinstance(client, OfflineProvider):
        raise RoleOffline(client.reason)
    return config, client


def _refused_key_variable(config: ModelConfig) -> OfflineProvider | None:
    """The offline provider saying why, when the row's key variable is not one named for a key."""
    if config.api_key_env and not re.fullmatch(API_KEY_VARIABLE, config.api_key_env):
        return OfflineProvider(
            reason=f"The {config.role!r} role's row takes its key from {config.api_key_env!r}; a model's key "
            "must come from a variable ending in _API_KEY, so that no other secret reaches its endpoint."
        )
    return None


def _api_key(config: ModelConfig, default: str) -> str:
    """The row's key (from the environment variable it names), else ``default``."""
    if config.api_key_env:
        return os.environ.get(config.api_key_env, "").strip()
    return default


def _anthropic(config: ModelConfig) -> Provider:
    if refused := _refused_key_variable(config):
        return refused
    api_key = _api_key(config, settings.ANTHROPIC_API_KEY)
    if not api_key:
        variable = config.api_key_env or "ANTHROPIC_API_KEY"
        return OfflineProvider(
            reason=f"The {config.role!r} role is set to {config.provider}/{config.model}, but {variable} is not set."
        )
    from llm.anthropic_provider import AnthropicProvider  # the SDK loads with the first provider

    return _shared(
        AnthropicProvider,
        api_key,
        config.base_url or settings.ANTHROPIC_BASE_URL or None,
        settings.LLM_MAX_RETRIES,
        settings.LLM_TIMEOUT_SECONDS,
    )


def _openai(config: ModelConfig, *, api: str) -> Provider:
    """Any OpenAI-compatible server, through ``api`` (``OPENAI_APIS``). A local one (a
    base_url) may need no key; OpenAI's own does."""
    if refused := _refused_key_variable(config):
        return refused
    from llm import openai_provider  # the SDK loads only for a row that uses it

    api_key = _api_key(config, settings.OPENAI_API_KEY)
    base_url = config.base_url or settings.OPENAI_BASE_URL or None
    if not api_key and base_url is None:
        variable = config.api_key_env or "OPENAI_API_KEY"
        return OfflineProvider(
            reason=f"The {config.role!r} role is set to {config.provider}/{config.model}, but {variable} "
            "is not set and the row has no base URL."
        )
    kind = getattr(openai_provider, OPENAI_APIS[api])
    return _shared(kind, api_key, base_url, settings.LLM_MAX_RETRIES, settings.LLM_TIMEOUT_SECONDS)


_providers: dict[tuple, AnthropicProvider | OpenAIProvider] = {}  # an OpenAIResponsesProvider is one
_providers_lock = threading.Lock()


def _shared(
    kind: type[AnthropicProvider] | type[OpenAIProvider],
    api_key: str,
    base_url: str | None,
    max_retries: int,
    timeout: float,
) -> Provider:
    """One provider per configuration, shared by every turn: it keeps the SDK
    clients, their TLS context and their open connections. (A process holds
    one per distinct endpoint and key, a few at most.)"""
    key = (kind, api_key, base_url, max_retries, timeout)
    with _providers_lock:
        provider = _providers.get(key)
        if provider is None:
            provider = _providers[key] = kind(
                api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout
            )
    return provider


def close_providers() -> None:
    """Close the shared providers' connections and forget them: the next call
    makes new ones. For tests, whose model servers come and go, and shutdown."""
    with _providers_lock:
        providers = list(_providers.values())
        _providers.clear()
    for provider in providers:
        provider.close()


def warm_up() -> None:
    """Load now what a process's first model call would load on the event loop: the
    Anthropic SDK's request set-up, the price catalog, and the ``openai`` SDK when
    ``EUNICE_PRELOAD_OPENAI`` is on. Called at server start."""
    from llm.anthropic_provider import warm_up as warm_up_anthropic
    from llm.prices import warm_up as warm_up_prices

    warm_up_anthropic()
    warm_up_prices()
    if settings.EUNICE_PRELOAD_OPENAI:
        import llm.openai_provider  # noqa: F401


def _offline(config: ModelConfig) -> Provider:
    return OfflineProvider(reason=f"No language model is configured for the {config.role!r} role.")


# The provider class of each OpenAI API, by name (its module is imported only when used).
OPENAI_APIS = {"chat": "OpenAIProvider", "responses": "OpenAIResponsesProvider"}

# Names match settings.LLM_PROVIDERS and llm.capabilities.NATIVE.
PROVIDERS: dict[str, Callable[[ModelConfig], Provider]] = {
    "anthropic": _anthropic,
    "openai": functools.partial(_openai, api="chat"),
    "openai_responses": functools.partial(_openai, api="responses"),
    "offline": _offline,
}

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

from eunice.env import env_http_url, env_model_ref
from llm import LLMConfigError, LLMRequest
from llm.anthropic_provider import AnthropicProvider
from llm.models import ModelConfig
from llm.offline import OfflineProvider
from llm.roles import PROVIDERS, aget_model_for_role, create_llm_client_for_role, get_model_for_role
from registry.surface import PROVIDER_NATIVE_CAPABILITIES
from tests.llm.conftest import TEST_KEY

pytestmark = pytest.mark.django_db


def row(role="chat", **fields) -> ModelConfig:
    defaults = {"provider": "anthropic", "model": "claude-row", "max_output_tokens": 8192}
    return ModelConfig.objects.create(role=role, **{**defaults, **fields})


def test_the_roles_active_row_is_used():
    row(capabilities={"web_search": True})
    model = get_model_for_role("chat")
    assert (model.pk is not None, model.model, model.max_output_tokens) == (True, "claude-row", 8192)


def test_the_delegate_role_uses_the_chat_model_until_it_has_a_row_of_its_own():
    row("chat", model="claude-chat")
    assert get_model_for_role("delegate").model == "claude-chat"
    row("delegate", model="claude-small")
    assert get_model_for_role("delegate").model == "claude-small"
    assert get_model_for_role("chat").model == "claude-chat"


def test_an_inactive_delegate_row_is_passed_over_for_the_chat_model():
    row("chat", model="claude-chat")
    row("delegate", model="claude-small", is_active=False)
    assert async_to_sync(aget_model_for_role)("delegate").model == "claude-chat"


def test_an_inactive_row_falls_back_to_the_built_in_default():
    row(is_active=False)
    model = get_model_for_role("chat")
    assert model.pk is None and model.provider == "offline"


def test_without_a_key_the_built_in_default_is_offline_with_the_models_default_limit():
    model = get_model_for_role("builder")
    assert (model.role, model.provider, model.model) == ("builder", "offline", "offline")
    assert model.max_output_tokens == ModelConfig._meta.get_field("max_output_tokens").default
    assert isinstance(create_llm_client_for_role("builder"), OfflineProvider)


def test_with_a_key_the_built_in_default_is_anthropic(settings):
    settings.ANTHROPIC_API_KEY = TEST_KEY
    settings.ANTHROPIC_BASE_URL = "http://127.0.0.1:9"
    model = get_model_for_role("chat")
    assert (model.provider, model.model) == ("anthropic", django_settings.ANTHROPIC_DEFAULT_MODEL)
    client = create_llm_client_for_role("chat")
    assert isinstance(client, AnthropicProvider) and client.base_url == "http://127.0.0.1:9"


def test_eunice_default_model_wins_over_the_key(settings):
    settings.ANTHROPIC_API_KEY = TEST_KEY
    settings.EUNICE_DEFAULT_MODEL = ("anthropic", "claude-chosen")
    assert get_model_for_role("chat").model == "claude-chosen"
    settings.EUNICE_DEFAULT_MODEL = ("offline", "offline")
    assert get_model_for_role("chat").provider == "offline"


def test_a_row_for_anthropic_without_a_key_answers_offline_and_says_why():
    row()
    client = create_llm_client_for_role("chat")
    assert isinstance(client, OfflineProvider)
    text = client.complete(
        LLMRequest(model="x", system="", messages=[{"role": "user", "content": "hi"}], max_tokens=9)
    ).text
    assert "anthropic/claude-row" in text and "ANTHROPIC_API_KEY is not set" in text


def test_a_row_naming_an_unknown_provider_is_a_config_error():
    row(provider="gemini")
    with pytest.raises(LLMConfigError, match="unknown provider 'gemini'; use one of anthropic, offline, openai"):
        create_llm_client_for_role("chat")


def test_an_openai_compatible_row_brings_its_own_base_url_and_key(monkeypatch):
    from llm.openai_provider import OpenAIProvider

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-123456789")
    row(
        provider="openai",
        model="openai/gpt-4o-mini",
        base_url="https://openrouter.ai/api/v1",
        api_key_env="OPENROUTER_API_KEY",
    )
    provider = create_llm_client_for_role("chat")
    assert isinstance(provider, OpenAIProvider)
    assert (provider.base_url, provider._api_key) == ("https://openrouter.ai/api/v1", "sk-or-test-123456789")


def test_a_local_openai_compatible_server_needs_no_key():
    from llm.openai_provider import OpenAIProvider

    row(provider="openai", model="qwen2.5:7b", base_url="http://127.0.0.1:11434/v1")
    provider = create_llm_client_for_role("chat")
    assert isinstance(provider, OpenAIProvider) and provider.base_url == "http://127.0.0.1:11434/v1"


def test_openai_without_a_key_or_a_base_url_is_offline_and_says_why():
    row(provider="openai", model="gpt-4o-mini", api_key_env="MISSING_API_KEY")
    provider = create_llm_client_for_role("chat")
    assert isinstance(provider, OfflineProvider) and "MISSING_API_KEY is not set" in provider.reason


def test_an_anthropic_row_may_name_its_own_key_variable_and_endpoint(monkeypatch):
    monkeypatch.setenv("TEAM_ANTHROPIC_API_KEY", TEST_KEY)
    row(api_key_env="TEAM_ANTHROPIC_API_KEY", base_url="http://127.0.0.1:9999")
    provider = create_llm_client_for_role("chat")
    assert isinstance(provider, AnthropicProvider) and provider.base_url == "http://127.0.0.1:9999"


@pytest.mark.parametrize(("provider", "variable"), [("openai", "SECRET_KEY"), ("anthropic", "DATABASE_URL")])
def test_a_row_never_sends_a_secret_that_is_not_a_model_key_to_its_endpoint(monkeypatch, provider, variable):
    # A row saved past the admin's validation (a script, a fixture) is refused where the key is read.
    monkeypatch.setenv(variable, "the-process-secret")
    row(provider=provider, model="m", base_url="https://collector.example.com/v1", api_key_env=variable)
    client = create_llm_client_for_role("chat")
    assert isinstance(client, OfflineProvider)
    assert f"takes its key from {variable!r}; a model's key must come from a variable ending in _API_KEY" in (
        client.reason
    )


def test_a_request_takes_its_token_limit_from_the_model_row():
    config = row(max_output_tokens=12345)
    request = LLMRequest.for_model(config, system="s", messages=[])
    assert (request.model, request.max_tokens) == ("claude-row", 12345)


@pytest.mark.django_db(transaction=True)  # the async ORM runs on another thread's connection
@pytest.mark.asyncio
async def test_async_callers_get_the_same_row():
    from llm.roles import aget_model_for_role

    await ModelConfig.objects.acreate(role="auditor", provider="offline", model="offline", max_output_tokens=100)
    assert (await aget_model_for_role("auditor")).max_output_tokens == 100
    assert (await aget_model_for_role("nobody")).pk is None
    # The async ORM's worker thread keeps its connection; close it so the test database can be dropped.
    await sync_to_async(connections.close_all)()


def test_provider_names_match_everywhere():
    assert set(PROVIDERS) == set(PROVIDER_NATIVE_CAPABILITIES) == set(django_settings.LLM_PROVIDERS)


def test_eunice_default_model_is_read_as_provider_and_model(monkeypatch):
    monkeypatch.setenv("EUNICE_DEFAULT_MODEL", "anthropic/claude-x")
    assert env_model_ref("EUNICE_DEFAULT_MODEL", ("anthropic", "offline")) == ("anthropic", "claude-x")
    monkeypatch.setenv("EUNICE_DEFAULT_MODEL", "offline")
    assert env_model_ref("EUNICE_DEFAULT_MODEL", ("anthropic", "offline")) == ("offline", "offline")


@pytest.mark.parametrize(
    "value, complaint",
    [
        ("openai/gpt", "unknown provider 'openai'"),
        ("anthropic", "names no model; expected anthropic/MODEL"),
    ],
)
def test_a_bad_default_model_stops_the_process_naming_the_variable(monkeypatch, value, complaint):
    monkeypatch.setenv("EUNICE_DEFAULT_MODEL", value)
    with pytest.raises(ImproperlyConfigured, match=f"EUNICE_DEFAULT_MODEL=.*{complaint}"):
        env_model_ref("EUNICE_DEFAULT_MODEL", ("anthropic", "offline"))


def test_a_base_url_must_be_http_and_never_shows_a_password(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8765/")
    assert env_http_url("ANTHROPIC_BASE_URL") == "http://127.0.0.1:8765"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "ftp://user:hunter2@host")
    with pytest.raises(ImproperlyConfigured, match="ANTHROPIC_BASE_URL") as info:
        env_http_url("ANTHROPIC_BASE_URL")
    assert "hunter2" not in str(info.value)

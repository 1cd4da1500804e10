"""One test per price rule: the catalog prices a known model, the row's price wins, an unknown is flagged."""

from decimal import Decimal

import pytest

from llm import Usage
from llm.models import ModelConfig
from llm.prices import _warn_unpriced, catalog_prices, prices_for

MILLION = Usage(input_tokens=1_000_000)


def config(provider="anthropic", model="claude-sonnet-4-5", **prices) -> ModelConfig:
    return ModelConfig(role="chat", provider=provider, model=model, **prices)


@pytest.mark.parametrize(
    ("provider", "model", "base_url"),
    [
        ("anthropic", "claude-sonnet-4-5", ""),
        ("openai", "gpt-4o-mini", ""),
        ("openai", "openai/gpt-4o-mini", "https://openrouter.ai/api/v1"),
        ("openai_responses", "gpt-4o-mini", ""),
        ("openai", "gpt-4o-mini", "https://my-resource.openai.azure.com/openai/v1/"),
    ],
)
def test_a_known_model_costs_more_than_nothing(provider, model, base_url):
    usage = Usage(input_tokens=7_000, output_tokens=700)
    row = config(provider, model, base_url=base_url)
    assert prices_for(row).source == "catalog"
    assert usage.cost_usd(row) > 0


def test_the_catalog_gives_claudes_own_prices_cache_reads_and_writes_included():
    row = config()
    assert Usage(input_tokens=100_000, output_tokens=100_000).cost_usd(row) == pytest.approx(0.3 + 1.5)
    assert Usage(cache_read_input_tokens=100_000).cost_usd(row) == pytest.approx(0.03)
    assert Usage(cache_creation_input_tokens=100_000).cost_usd(row) == pytest.approx(0.375)


def test_a_models_own_cache_price_replaces_any_fixed_multiplier():
    # gpt-4o-mini's cached input is half its input price, not a tenth.
    row = config("openai", "gpt-4o-mini")
    assert Usage(cache_read_input_tokens=1_000_000).cost_usd(row) == pytest.approx(0.075)


def test_a_long_prompt_pays_the_models_tier_price():
    assert Usage(input_tokens=300_000).cost_usd(config()) == pytest.approx(0.3 * 6)


def test_the_rows_price_overrides_the_catalog():
    row = config(input_price_per_mtok=Decimal("1"), output_price_per_mtok=Decimal("2"))
    assert prices_for(row).source == "configured"
    assert Usage(input_tokens=100_000).cost_usd(row) == pytest.approx(0.1)
    assert Usage(output_tokens=100_000).cost_usd(row) == pytest.approx(0.2)
    # The prices it leaves empty still come from the catalog.
    assert Usage(cache_read_input_tokens=100_000).cost_usd(row) == pytest.approx(0.03)


def test_a_zero_price_is_a_real_price_for_a_local_model():
    row = config("openai", "qwen2.5:7b", input_price_per_mtok=0, output_price_per_mtok=0)
    assert prices_for(row).known
    assert MILLION.cost_usd(row) == 0.0


def test_an_unknown_model_is_flagged_not_silently_free():
    row = config("openai", "my-finetune", base_url="http://127.0.0.1:8000/v1")
    assert not prices_for(row).known
    assert MILLION.cost_usd(row) == 0.0


def test_half_a_price_does_not_price_an_unknown_model():
    row = config("openai", "my-finetune", input_price_per_mtok=Decimal("1"))
    assert not prices_for(row).known


def test_an_unknown_models_cache_prices_default_to_its_input_price():
    row = config("openai", "my-finetune", input_price_per_mtok=Decimal("2"), output_price_per_mtok=Decimal("4"))
    assert Usage(cache_read_input_tokens=1_000_000).cost_usd(row) == pytest.approx(2)


def test_the_offline_provider_has_no_catalog_price():
    assert not catalog_prices("offline", "offline").known


@pytest.mark.parametrize(
    ("provider", "base_url"),
    [("openai", "https://llm-gateway.example.com/v1"), ("anthropic", "https://claude-proxy.example.com")],
)
def test_a_gateway_the_catalog_does_not_know_costs_what_the_models_own_provider_bills(provider, base_url):
    model = "gpt-4o-mini" if provider == "openai" else "claude-sonnet-4-5"
    assert prices_for(config(provider, model, base_url=base_url)) == prices_for(config(provider, model))


def test_a_base_url_the_catalog_knows_prices_the_model_at_that_provider():
    groq = config("openai", "deepseek-r1-distill-llama-70b", base_url="https://api.groq.com/openai/v1")
    assert prices_for(groq).source == "catalog"
    assert MILLION.cost_usd(groq) == pytest.approx(0.75)  # Groq's price, a model OpenAI does not sell


def test_a_catalog_model_without_a_cache_price_bills_cached_tokens_as_input():
    groq = config("openai", "deepseek-r1-distill-llama-70b", base_url="https://api.groq.com/openai/v1")
    assert Usage(cache_read_input_tokens=1_000_000).cost_usd(groq) == MILLION.cost_usd(groq)


def test_an_unknown_model_is_logged_once_naming_it_and_where_to_price_it(caplog):
    _warn_unpriced.cache_clear()
    with caplog.at_level("WARNING", logger="eunice.llm"):
        for _ in range(3):
            MILLION.cost_usd(config("openai", "my-other-finetune", base_url="http://127.0.0.1:8000/v1"))
    assert caplog.messages == ["no known price for model openai/my-other-finetune; set its prices in the admin"]


def test_an_unknown_model_priced_on_its_row_is_not_logged_as_unpriced(caplog):
    _warn_unpriced.cache_clear()
    catalog_prices.cache_clear()
    with caplog.at_level("WARNING", logger="eunice.llm"):
        MILLION.cost_usd(config("openai", "qwen2.5:7b", input_price_per_mtok=0, output_price_per_mtok=0))
        MILLION.cost_usd(config("offline", "offline"))
    assert caplog.messages == []


def test_an_azure_deployment_not_named_after_its_model_is_flagged():
    row = config("openai", "prod-chat", base_url="https://my-resource.openai.azure.com/openai/v1/")
    assert not prices_for(row).known

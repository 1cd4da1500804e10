from decimal import Decimal

import pytest

from llm import Usage
from llm.models import ModelConfig


def priced(input_price: str, output_price: str) -> ModelConfig:
    return ModelConfig(
        role="chat",
        provider="anthropic",
        model="m",
        input_price_per_mtok=Decimal(input_price),
        output_price_per_mtok=Decimal(output_price),
    )


def test_cost_is_tokens_times_the_rows_price_per_million():
    usage = Usage(input_tokens=2_000, output_tokens=500)
    assert usage.cost_usd(priced("3", "15")) == pytest.approx(0.006 + 0.0075)


def test_cost_is_a_float_in_usd_and_zero_for_an_unpriced_model():
    cost = Usage(input_tokens=10, output_tokens=10).cost_usd(ModelConfig(role="r", provider="offline", model="offline"))
    assert cost == 0.0 and isinstance(cost, float)


@pytest.mark.django_db
def test_a_stored_rows_decimal_prices_give_the_cost(scripted, provider_for):
    ModelConfig.objects.create(
        role="chat",
        provider="anthropic",
        model="claude-test",
        input_price_per_mtok=Decimal("3.0000"),
        output_price_per_mtok=Decimal("15.0000"),
    )
    from llm.roles import get_model_for_role
    from tests.llm.conftest import request

    server = scripted([{"text": "ok", "usage": {"input_tokens": 100_000, "output_tokens": 10_000}}])
    response = provider_for(server).complete(request("Hi"))
    assert response.usage.cost_usd(get_model_for_role("chat")) == pytest.approx(0.30 + 0.15)


def test_usages_add_up_across_turns():
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40)
    assert total == Usage(11, 22, 33, 44)
    assert total.total_input_tokens == 11 + 33 + 44

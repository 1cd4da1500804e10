"""What a model's tokens cost: the row's own prices, else the genai-prices catalog.

Each of a ModelConfig's four prices (input, output, cache read, cache write,
USD per million tokens) is the row's when set (0 included: a local model is
free), else the model's price in the catalog the ``genai-prices`` package
ships (looked up once per model and process; no network). A model the catalog
does not know and the row does not price is *unpriced*: it costs $0 but says
so (``Prices.known`` is False), the admin flags it and a warning is logged.

A cache price the catalog does not give is the input price: a provider that
does not discount cached tokens bills them as input, and billing them at the
input price is never less than the truth.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from llm.models import ModelConfig

logger = logging.getLogger("eunice.llm")

Source = Literal["configured", "catalog", "unknown"]
_ZERO = Decimal(0)
# Our provider names as the catalog's provider ids; "openai" (either API) is any
# OpenAI-compatible server, so a base_url names its provider (OpenRouter, …).
_CATALOG_PROVIDER = {"anthropic": "anthropic", "openai": "openai", "openai_responses": "openai"}


@dataclass(frozen=True, slots=True)
class Rate:
    """USD per million tokens; past a tier's ``start`` (prompt tokens of the call) its price applies to all."""

    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...] = ()

    def at(self, prompt_tokens: int) -> Decimal:
        price = self.base
        for start, tier_price in self.tiers:
            if prompt_tokens > start:
                price = tier_price
        return price


@dataclass(frozen=True, slots=True)
class Prices:
    input: Rate
    output: Rate
    cache_read: Rate
    cache_write: Rate
    source: Source

    @property
    def known(self) -> bool:
        return self.source != "unknown"


UNPRICED = Prices(Rate(_ZERO), Rate(_ZERO), Rate(_ZERO), Rate(_ZERO), "unknown")


def prices_for(config: ModelConfig) -> Prices:
    """The prices ``config``'s calls cost: the row's, each filled in from the catalog."""
    own = (
        config.input_price_per_mtok,
        config.output_price_per_mtok,
        config.cache_read_price_per_mtok,
        config.cache_write_price_per_mtok,
    )
    catalog = catalog_prices(config.provider, config.model, config.base_url or "")
    # A model the catalog does not know is priced by both its input and output price.
    if not catalog.known and (own[0] is None or own[1] is None):
        _warn_unpriced(config.provider, config.model)
        return UNPRICED
    if all(price is None for price in own):
        return catalog
    input_rate = _own(own[0]) or catalog.input
    return Prices(
        input_rate,
        _own(own[1]) or catalog.output,
        _own(own[2]) or (catalog.cache_read if catalog.known else input_rate),
        _own(own[3]) or (catalog.cache_write if catalog.known else input_rate),
        "configured",
    )


@functools.cache
def _warn_unpriced(provider: str, model: str) -> None:
    """Log, once per model and process, that its calls count as $0 (the offline provider has no price to set)."""
    if provider in _CATALOG_PROVIDER:
        logger.warning("no known price for model %s/%s; set its prices in the admin", provider, model)


def _own(price: Decimal | int | None) -> Rate | None:
    return None if price is None else Rate(Decimal(price))


@functools.cache
def catalog_prices(provider: str, model: str, base_url: str = "") -> Prices:
    """The catalog's prices for ``model`` at ``provider`` (or at ``base_url``), or UNPRICED."""
    provider_id = _CATALOG_PROVIDER.get(provider)
    if provider_id is None or not model:
        return UNPRICED
    from genai_prices import data_snapshot  # ~0.7 s to import: only when a model is first priced

    snapshot = data_snapshot.get_snapshot()
    # An OpenAI-compatible base_url names its provider (OpenRouter, Groq, …); one the
    # catalog does not know (a gateway, a local server) is taken to serve the model
    # its name says: OpenAI's gpt-4o behind a proxy costs what OpenAI bills.
    lookups = [(None, base_url), (provider_id, None)] if base_url and provider_id == "openai" else [(provider_id, None)]
    for by_id, by_url in lookups:
        try:
            _, info = snapshot.find_provider_model(model, None, by_id, by_url)
            break
        except LookupError:
            continue
    else:
        return UNPRICED
    price = info.get_prices(datetime.now(tz=UTC))
    input_rate = _rate(getattr(price, "input_mtok", None))
    if input_rate is None:
        return UNPRICED
    return Prices(
        input_rate,
        _rate(getattr(price, "output_mtok", None)) or Rate(_ZERO),
        _rate(getattr(price, "cache_read_mtok", None)) or input_rate,
        _rate(getattr(price, "cache_write_mtok", None)) or input_rate,
        "catalog",
    )


def _rate(value: Any) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return Rate(value)
    return Rate(Decimal(value.base), tuple((int(t.start), Decimal(t.price)) for t in value.tiers))


def warm_up() -> None:
    """Load the catalog now, not on the event loop at a process's first priced call."""
    catalog_prices("anthropic", "claude-sonnet-4-5")

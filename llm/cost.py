"""Token usage and what it costs under a ModelConfig's prices."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from llm.prices import prices_for

if TYPE_CHECKING:
    from llm.models import ModelConfig

_MTOK = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call. ``input_tokens`` excludes cached reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def cost_usd(self, config: ModelConfig) -> float:
        """USD for this usage at ``config``'s prices (llm/prices.py); 0.0 for an unpriced model."""
        prices = prices_for(config)
        prompt = self.total_input_tokens
        micro = (
            self.input_tokens * prices.input.at(prompt)
            + self.cache_read_input_tokens * prices.cache_read.at(prompt)
            + self.cache_creation_input_tokens * prices.cache_write.at(prompt)
            + self.output_tokens * prices.output.at(prompt)
        )
        return float(micro / _MTOK)

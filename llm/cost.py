"""Token usage and what it costs under a ModelConfig's prices."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm.models import ModelConfig

# Prompt-cache pricing relative to the input price, as Anthropic bills it:
# reading a cached prefix costs a tenth, writing one (5-minute TTL) a quarter more.
CACHE_READ_MULTIPLIER = Decimal("0.1")
CACHE_WRITE_MULTIPLIER = Decimal("1.25")
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
        """USD for this usage at ``config``'s per-million-token prices."""
        input_price = Decimal(config.input_price_per_mtok)
        output_price = Decimal(config.output_price_per_mtok)
        micro = (
            self.input_tokens * input_price
            + self.cache_read_input_tokens * input_price * CACHE_READ_MULTIPLIER
            + self.cache_creation_input_tokens * input_price * CACHE_WRITE_MULTIPLIER
            + self.output_tokens * output_price
        )
        return float(micro / _MTOK)

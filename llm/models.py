"""The model configuration: which model serves each role, and at what price."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from llm.capabilities import claim_problem, native_capabilities

MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens
# A row's key comes from a variable named for a key: a row (and whoever may edit one) cannot
# send another secret of the process (SECRET_KEY, DATABASE_URL, …) to the endpoint it names.
API_KEY_VARIABLE = r"^[A-Z][A-Z0-9_]*_API_KEY$"
_PRICE_HELP = "USD per million tokens; empty: the model's price from genai-prices"


def validate_http_url(value: str) -> None:
    """Raises ValidationError unless ``value`` is an http(s) URL with a host (a bare
    host name such as a container's ``vllm`` is fine)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8000/v1")


class ModelConfig(models.Model):
    """Which model serves a role, what it can do natively and what it costs."""

    role = models.CharField(max_length=64, unique=True, help_text="e.g. chat, builder, auditor")
    provider = models.CharField(max_length=64, help_text="anthropic, openai (any OpenAI-compatible server) or offline")
    model = models.CharField(max_length=128)
    base_url = models.CharField(
        max_length=500,
        blank=True,
        validators=[validate_http_url],
        help_text="OpenAI-compatible servers: the API root, e.g. http://127.0.0.1:8000/v1 (vLLM); "
        "empty: the provider's default endpoint",
    )
    api_key_env = models.CharField(
        max_length=64,
        blank=True,
        validators=[
            RegexValidator(
                API_KEY_VARIABLE,
                "must name an environment variable ending in _API_KEY, e.g. OPENROUTER_API_KEY "
                "(no other secret is sent to a model's endpoint)",
            )
        ],
        help_text="The environment variable holding this model's API key, ending in _API_KEY (the key is never "
        "stored here); "
        "empty: the provider's default (ANTHROPIC_API_KEY, OPENAI_API_KEY, none for a local server)",
    )
    capabilities = models.JSONField(default=dict, blank=True)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    thinking_budget_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Thinking: tokens to think with (at least 1024, under max output tokens); empty: off",
    )
    # Each price left empty comes from genai-prices (llm/prices.py); 0 is a real price (a local model).
    input_price_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text=_PRICE_HELP
    )
    output_price_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text=_PRICE_HELP
    )
    cache_read_price_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text=_PRICE_HELP
    )
    cache_write_price_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text=_PRICE_HELP
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table the registry app created; the model moved, the rows stayed.
        db_table = "model_configs"
        ordering = ["role"]

    def clean(self) -> None:
        """Raises ValidationError for capabilities we do not know, or a thinking budget the API would refuse."""
        problem = claim_problem(self.capabilities)
        if problem is not None:
            raise ValidationError({"capabilities": problem})
        budget = self.thinking_budget_tokens
        if budget is not None and not MIN_THINKING_BUDGET <= budget < self.max_output_tokens:
            raise ValidationError(
                {
                    "thinking_budget_tokens": f"must be at least {MIN_THINKING_BUDGET} and less than "
                    f"max output tokens ({self.max_output_tokens})"
                }
            )

    @property
    def active_capabilities(self) -> frozenset[str]:
        """The capabilities this row claims that its provider also delivers (llm/capabilities.py)."""
        claimed = {name for name, on in (self.capabilities or {}).items() if on}
        return frozenset(claimed) & native_capabilities(self.provider)

    def __str__(self) -> str:
        return f"{self.role}: {self.provider}/{self.model}"

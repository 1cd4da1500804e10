"""The model configuration: which model serves each role, and at what price."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

MIN_THINKING_BUDGET = 1024  # the API's minimum budget_tokens


class ModelConfig(models.Model):
    """Which model serves a role, what it can do natively and what it costs."""

    role = models.CharField(max_length=64, unique=True, help_text="e.g. chat, builder, auditor")
    provider = models.CharField(max_length=64, help_text="e.g. anthropic, offline")
    model = models.CharField(max_length=128)
    capabilities = models.JSONField(default=dict, blank=True)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    thinking_budget_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Thinking: tokens to think with (at least 1024, under max output tokens); empty: off",
    )
    input_price_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    output_price_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table the registry app created; the model moved, the rows stayed.
        db_table = "model_configs"
        ordering = ["role"]

    def clean(self) -> None:
        """Raises ValidationError for a thinking budget the API would refuse."""
        budget = self.thinking_budget_tokens
        if budget is not None and not MIN_THINKING_BUDGET <= budget < self.max_output_tokens:
            raise ValidationError(
                {
                    "thinking_budget_tokens": f"must be at least {MIN_THINKING_BUDGET} and less than "
                    f"max output tokens ({self.max_output_tokens})"
                }
            )

    def __str__(self) -> str:
        return f"{self.role}: {self.provider}/{self.model}"

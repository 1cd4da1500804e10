"""The model configuration: which model serves each role, and at what price."""

from __future__ import annotations

from django.db import models


class ModelConfig(models.Model):
    """Which model serves a role, what it can do natively and what it costs."""

    role = models.CharField(max_length=64, unique=True, help_text="e.g. chat, builder, auditor")
    provider = models.CharField(max_length=64, help_text="e.g. anthropic, offline")
    model = models.CharField(max_length=128)
    capabilities = models.JSONField(default=dict, blank=True)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    input_price_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    output_price_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        # The table the registry app created; the model moved, the rows stayed.
        db_table = "model_configs"
        ordering = ["role"]

    def __str__(self) -> str:
        return f"{self.role}: {self.provider}/{self.model}"

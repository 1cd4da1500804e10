"""Admin for the model configuration: rows of the platform, superusers only.

Each row shows where its prices come from (its own, the catalog, or none: an
unpriced model is flagged, never silently free), and "Test this model" sends
the model one short request and reports its answer or its error.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Field, QuerySet
from django.http import HttpRequest

from eunice.platform_admin import PlatformAdmin
from llm.capabilities import KNOWN
from llm.errors import LLMError
from llm.models import ModelConfig
from llm.prices import prices_for
from llm.roles import ROLES
from llm.types import LLMRequest

TEST_PROMPT = "Reply with the single word: ready"
TEST_MAX_TOKENS = 16
_ANSWER_SHOWN = 200


@admin.register(ModelConfig)
class ModelConfigAdmin(PlatformAdmin):
    list_display = (
        "role",
        "serves",
        "provider",
        "model",
        "price",
        "max_output_tokens",
        "thinking_budget_tokens",
        "is_active",
    )
    list_filter = ("provider", "is_active")
    actions = ("test_model",)

    def formfield_for_dbfield(self, db_field: Field, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "role":
            kwargs["help_text"] = "; ".join(f"{name}: {serves}" for name, serves in ROLES.items()) + (
                "; or any role call_llm names"
            )
        elif db_field.name == "capabilities":
            kwargs["help_text"] = (
                'Native capabilities the model claims, e.g. {"web_search": true}; known: '
                f"{', '.join(sorted(KNOWN))}. One counts only where the provider delivers it (docs/models.md)."
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    @admin.display(description="Serves")
    def serves(self, row: ModelConfig) -> str:
        return ROLES.get(row.role, "call_llm (role=…)")

    @admin.display(description="Price (in / out per Mtok)")
    def price(self, row: ModelConfig) -> str:
        prices = prices_for(row)
        if not prices.known:
            return "⚠ unknown: set its prices (costs count as $0)"
        source = "own" if prices.source == "configured" else "catalog"
        return f"${prices.input.base:g} / ${prices.output.base:g} ({source})"

    @admin.action(description="Test this model (one short request)", permissions=["change"])
    def test_model(self, request: HttpRequest, rows: QuerySet[ModelConfig]) -> None:
        for row in rows:
            level, text = test_model(row)
            self.message_user(request, f"{row}: {text}", level)


def test_model(row: ModelConfig) -> tuple[int, str]:
    """Send ``row``'s model one short request; the message level and what to tell the admin."""
    from llm.roles import create_llm_client_for_role

    try:
        provider = create_llm_client_for_role(row.role, model=row)
        if provider.name == "offline":
            return messages.WARNING, getattr(provider, "reason", "no model is configured")
        request = LLMRequest(
            model=row.model,
            system="",
            messages=[{"role": "user", "content": TEST_PROMPT}],
            max_tokens=TEST_MAX_TOKENS,
        )
        response = provider.complete(request)
    except LLMError as exc:
        return messages.ERROR, f"failed: {exc}"
    cost = response.usage.cost_usd(row)
    answer = response.text.strip()[:_ANSWER_SHOWN] or f"(no text; stop reason {response.stop_reason})"
    usage = response.usage
    return (
        messages.SUCCESS,
        f"answered {answer!r} ({usage.total_input_tokens} in, {usage.output_tokens} out, ${cost:.6f})",
    )

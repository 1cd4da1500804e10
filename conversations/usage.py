"""The usage log as the registry's ledger of tool costs (``registry.usage``)."""

from __future__ import annotations

from conversations.models import Conversation, UsageLog
from llm.cost import Usage
from registry.context import ToolContext


class UsageLogLedger:
    """Writes one usage row per tool call that cost something, and per model call charged to it."""

    def tool_cost(self, context: ToolContext, tool: str, cost: float, *, success: bool) -> None:
        UsageLog.objects.create(
            tenant_id=context.tenant_id,
            user_id=str(context.user_id or ""),
            conversation_id=context.conversation_id or None,
            kind=UsageLog.Kind.TOOL,
            name=tool,
            cost_usd=cost,
            success=success,
        )

    def model_cost(
        self, *, tenant_id: str, user_id: str, conversation_id: str, model: str, usage: Usage, cost: float
    ) -> None:
        # A job may outlive the conversation that asked for it: the row then names none.
        exists = bool(conversation_id) and Conversation.objects.filter(pk=conversation_id).exists()
        UsageLog.objects.create(
            tenant_id=tenant_id,
            user_id=user_id,
            conversation_id=conversation_id if exists else None,
            kind=UsageLog.Kind.LLM,
            name=model,
            cost_usd=cost,
            input_tokens=usage.total_input_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            output_tokens=usage.output_tokens,
        )

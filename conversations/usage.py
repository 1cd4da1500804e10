"""The usage log as the registry's ledger of tool costs (``registry.usage``)."""

from __future__ import annotations

from conversations.models import UsageLog
from registry.context import ToolContext


class UsageLogLedger:
    """Writes one usage row per tool call that cost something."""

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

"""What a tool call or a model call cost, written to the usage log whoever made it.

A tool that calls a model (``call_llm``) reports the cost on its result. The
registry charges it here, at the end of every call, so the cost is
attributed to the tool, the tenant and the user however the call came: a
conversation's turn, a custom tool's ``call_tool``, another handler, the
playground or ``manage.py call_tool``. A model call the registry makes
itself (the tool builder's and auditor's) is charged with ``charge_model``.
The usage log belongs to the conversations app, which installs the ledger
(registry depends on no other app).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from registry.contract import spec_for
from registry.installed import Port

if TYPE_CHECKING:
    from llm.cost import Usage
    from llm.models import ModelConfig
    from registry.context import ToolContext
    from registry.result import ToolResult


class UsageLedger(Protocol):
    """Where tool costs are written."""

    def tool_cost(self, context: ToolContext, tool: str, cost: float, *, success: bool) -> None: ...

    def model_cost(
        self, *, tenant_id: str, user_id: str, conversation_id: str, model: str, usage: Usage, cost: float
    ) -> None: ...


ledger: Port[UsageLedger] = Port("usage ledger", "conversations")


def charge(context: ToolContext, tool: str, result: ToolResult) -> None:
    """Write ``result``'s cost, if any, for ``tool`` called with ``context``.

    A roll-up (delegate) is not charged: the calls it made were charged one by one.
    Needs the database: call it off the event loop.
    """
    if not result.cost:
        return
    spec = spec_for(tool)
    if spec is not None and spec.is_cost_rollup:
        return
    installed = ledger.installed()
    if installed is not None:
        # As the execution log counts it: only an Err sets ``error``.
        installed.tool_cost(context, tool, result.cost, success=result.error is None)


def charge_failure(context: ToolContext, tool: str, cost: float) -> None:
    """Write what a call of ``tool`` that ends in an Err spent anyway (a model asked twice
    whose replies were unusable), as a failed call: an Err carries no cost to ``charge``."""
    installed = ledger.installed()
    if installed is not None and cost:
        installed.tool_cost(context, tool, cost, success=False)


def charge_model(
    config: ModelConfig, usage: Usage, *, tenant_id: str, user_id: str = "", conversation_id: str = ""
) -> None:
    """Write one model call's usage and cost, at ``config``'s prices, for the tenant (and user,
    and conversation, when known) it was made for."""
    installed = ledger.installed()
    if installed is not None:
        installed.model_cost(
            tenant_id=tenant_id,
            user_id=user_id,
            conversation_id=conversation_id,
            model=config.model,
            usage=usage,
            cost=usage.cost_usd(config),
        )

"""The pre-dispatch gate: the rules every call passes before its tool is looked up.

Every caller reaches a handler through ``ToolRegistry.execute_tool``, and that runs
``check`` first: the chat dispatcher, a sandboxed program's inner ``call_tool``, the
``call_tool`` command, a REST view, the MCP endpoint (mcpserver/) and a person's approval.
The rules are a table, in order; the first that refuses decides:

* ``sandboxed_caller``: a call made by sandboxed code (``context.sandbox``) may reach
  only the tools its run may call, within the call tree's ``call_tool`` allowance.
* ``callers_rules``: the caller's own rules behind the ``CallGate`` port
  (``context.gate``): for a conversation, its loop guard and policy rules. The port
  travels into the calls a sandboxed run makes, so they meet the same rules.
* ``tenants_rules``: for a call that carries no gate (no conversation behind it: the
  command line, the playground, a REST view, the MCP endpoint), the tenant's policy
  rules behind the ``TenantPolicy`` port that ``conversations`` installs.
* ``persons_approval``: a call an approval rule covers (registry.approval_rules) waits
  for a person's approval instead of running; a run the person approved passes once,
  with exactly the approved arguments.

A refusal is an Err; the registry renders, records and logs it like a call that ran.
Every call meets the table: a caller cannot leave a rule out by leaving a port unset.
The registry skips ``check`` only when ``concerns`` says no rule could refuse the call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from registry.context import ToolContext
from registry.contract import Err
from registry.installed import Port
from registry.models import ALL_TENANTS
from registry.ports import TenantPolicy

if TYPE_CHECKING:
    from registry.registry import ToolRegistry

Rule = Callable[["ToolRegistry", str, dict, ToolContext], "Err | None"]


def sandboxed_caller(registry: ToolRegistry, name: str, inputs: dict, context: ToolContext) -> Err | None:
    if context.sandbox is None:
        return None
    from registry.sandbox.bridge import refusal

    why_not = refusal(registry, name, context.sandbox, context.tenant_id)
    if why_not is None and not context.sandbox.allowance.take_call():
        why_not = "this run and the tools it called have used all their call_tool calls"
    return Err(why_not, "SandboxPolicy") if why_not is not None else None


def callers_rules(registry: ToolRegistry, name: str, inputs: dict, context: ToolContext) -> Err | None:
    return context.gate.check(name, inputs, context) if context.gate is not None else None


tenant_policy: Port[TenantPolicy] = Port("tenant policy", "conversations")


def tenants_rules(registry: ToolRegistry, name: str, inputs: dict, context: ToolContext) -> Err | None:
    if context.gate is not None:  # the caller's gate applies the policy rules itself
        return None
    policy = tenant_policy.installed()
    return policy.check(name, inputs, context) if policy is not None else None


def persons_approval(registry: ToolRegistry, name: str, inputs: dict, context: ToolContext) -> Err | None:
    from registry import approval_rules

    return approval_rules.check(registry, name, inputs, context)


RULES: tuple[Rule, ...] = (sandboxed_caller, callers_rules, tenants_rules, persons_approval)


def check(registry: ToolRegistry, name: str, inputs: dict, context: ToolContext) -> Err | None:
    """The first refusal of ``RULES`` for this call, or None to let it run."""
    for rule in RULES:
        refused = rule(registry, name, inputs, context)
        if refused is not None:
            return refused
    return None


def concerns(name: str, context: ToolContext) -> bool:
    """Whether any rule of ``RULES`` could refuse this call. False only for a call with no
    sandbox scope and no gate, of a tool no tenant's rule names: the hot path of a call
    from the command line, the playground or a test, which then skips ``check``."""
    if context.gate is not None or context.sandbox is not None or context.approval_id:
        return True
    if time.monotonic() > _ruled.due:
        _ruled.refresh()
    return name in _ruled.names or context.tenant_id in _ruled.approving or _ruled.approve_all


def concerns_without_a_query(name: str, context: ToolContext) -> bool | None:
    """What ``concerns`` says, when it and ``check`` need no query (so they may run on an
    event loop); None when they might need one. That is: no sandbox scope, and either a
    caller's gate that has ``planned`` this call (its verdict was made beforehand and is
    only read back), or no gate and a tool no tenant's rule names, with the list of ruled
    tools not due for a re-read; and in both cases no person's approval that might need
    one (``approval_rules``: a rule for the tenant, rules due a re-read, an approved run)."""
    from registry import approval_rules

    if context.sandbox is not None or context.approval_id:
        return None
    if not approval_rules.asks_nobody_without_a_query(context.tenant_id):
        return None  # persons_approval may read the rules, or store a pending approval
    if context.gate is not None:
        planned = getattr(context.gate, "planned", None)
        return True if planned is not None and planned(context.tool_use_id) else None
    if time.monotonic() > _ruled.due or name in _ruled.names:
        return None
    return False


class _RuledTools:
    """The tools some tenant's policy rule names, read from the port at most every
    ``RULED_TOOLS_SECONDS`` (a rule saved in this process forgets it at once)."""

    __slots__ = ("names", "approving", "approve_all", "due")

    def __init__(self) -> None:
        self.names: frozenset[str] = frozenset()
        self.approving: frozenset[str] = frozenset()  # tenants an approval rule is for
        self.approve_all = False  # an approval rule for every tenant
        self.due = float("-inf")

    def refresh(self) -> None:
        from registry import approval_rules

        policy = tenant_policy.installed()
        self.names = policy.ruled_tools() if policy is not None else frozenset()
        self.approving = approval_rules.tenants()
        self.approve_all = ALL_TENANTS in self.approving
        self.due = time.monotonic() + RULED_TOOLS_SECONDS


RULED_TOOLS_SECONDS = 2.0
_ruled = _RuledTools()


def forget_ruled_tools() -> None:
    _ruled.due = float("-inf")

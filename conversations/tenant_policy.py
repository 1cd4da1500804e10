"""``registry.ports.TenantPolicy``: the policy rules for a call no conversation is behind.

The command line, the playground, a REST view and the MCP endpoint call tools with
no turn and so no ``TurnGate``; the registry's gate asks this instead (installed by
conversations.apps). The rules are the same table (conversations.policies), judged
with no conversation behind the call: no tool has run before it in one, and it is
the first call of its tool. So a ``block`` rule refuses as it would refuse a
conversation's first call (a tool that needs another to have run first is refused;
a tool limited to 0 calls is refused); a ``warn`` rule lets the call run (there is
no conversation to count it in or model to tell). The caller's capabilities are the
context's, else those of the user it names.

Most tools have no rule: which tools of which tenant have one is kept in memory,
refreshed when a rule is saved or deleted, in this process or another (the process
bus, eunice/bus.py), and at least every ``REFRESH_SECONDS`` (should the bus miss it).
"""

from __future__ import annotations

import threading
import time

from django.db.models.signals import post_delete, post_save

from conversations.capabilities import capabilities_for
from conversations.models import PolicyRule
from conversations.policies import check_policies
from datacatalog.access import caller_user
from eunice import bus
from registry import gate
from registry.context import ToolContext
from registry.contract import Err

REFRESH_SECONDS = 2.0
RULES_CHANGED = "conversations.policy_rules_changed"


class TenantRules:
    """``TenantPolicy`` over the tenant's enabled policy rules.

    Keeps which tenants (``*``: every tenant) have an enabled rule for each tool: a call
    of a tool with none (nearly every call) costs one lookup.
    """

    def __init__(self) -> None:
        self._by_tool: dict[str, frozenset[str]] = {}
        self._due = float("-inf")
        self._lock = threading.Lock()
        post_save.connect(self._changed, sender=PolicyRule, dispatch_uid="tenant_rules_saved")
        post_delete.connect(self._changed, sender=PolicyRule, dispatch_uid="tenant_rules_deleted")
        bus.on(RULES_CHANGED)(self.forget)
        bus.on_reconnect(self.forget)

    def forget(self, *_: object, **__: object) -> None:
        """Read the rules again at the next call (a rule was saved or deleted, here or elsewhere)."""
        self._due = float("-inf")
        gate.forget_ruled_tools()

    def _changed(self, **_: object) -> None:
        self.forget()
        bus.publish_on_commit(RULES_CHANGED)

    def ruled_tools(self) -> frozenset[str]:
        if time.monotonic() > self._due:
            self._refresh()
        return frozenset(self._by_tool)

    def rules_tool(self, name: str, tenant_id: str) -> bool:
        if time.monotonic() > self._due:
            self._refresh()
        tenants = self._by_tool.get(name, frozenset())
        return tenant_id in tenants or "*" in tenants

    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None:
        if time.monotonic() > self._due:
            self._refresh()
        tenants = self._by_tool.get(name)
        if tenants is None or (context.tenant_id not in tenants and "*" not in tenants):
            return None
        capabilities = frozenset(context.capabilities or ()) or capabilities_for(caller_user(context))
        violations = check_policies(
            name, tenant_id=context.tenant_id, capabilities=capabilities, succeeded_tools=set(), calls_so_far=0
        )
        blocked = [violation for violation in violations if violation.blocking]
        return Err(f"refused by policy: {blocked[0].detail}", "PolicyBlocked") if blocked else None

    def _refresh(self) -> None:
        with self._lock:
            due = time.monotonic() + REFRESH_SECONDS
            by_tool: dict[str, set[str]] = {}
            for tenant_id, tool_name in PolicyRule.objects.filter(enabled=True).values_list("tenant_id", "tool_name"):
                by_tool.setdefault(tool_name, set()).add(tenant_id)
            self._by_tool = {name: frozenset(tenants) for name, tenants in by_tool.items()}
            self._due = due

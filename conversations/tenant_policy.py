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
refreshed when a rule is saved or deleted in this process and at least every
``REFRESH_SECONDS`` (a rule changed in another process applies here within that).
"""

from __future__ import annotations

import threading
import time

from django.db.models.signals import post_delete, post_save

from conversations.capabilities import capabilities_for
from conversations.models import PolicyRule
from conversations.policies import check_policies
from datacatalog.access import caller_user
from registry.context import ToolContext
from registry.contract import Err

REFRESH_SECONDS = 2.0


class _RuledTools:
    """The (tenant, tool) pairs that have an enabled rule; tenant ``*`` for every tenant."""

    def __init__(self) -> None:
        self._pairs: frozenset[tuple[str, str]] = frozenset()
        self._checked_at = float("-inf")
        self._lock = threading.Lock()

    def invalidate(self, **_: object) -> None:
        self._checked_at = float("-inf")

    def cover(self, tenant_id: str, name: str) -> bool:
        if time.monotonic() - self._checked_at > REFRESH_SECONDS:
            self._refresh()
        pairs = self._pairs
        return (tenant_id, name) in pairs or ("*", name) in pairs

    def _refresh(self) -> None:
        with self._lock:
            checked_at = time.monotonic()
            rows = PolicyRule.objects.filter(enabled=True).values_list("tenant_id", "tool_name")
            self._pairs = frozenset(rows)
            self._checked_at = checked_at


_ruled = _RuledTools()
post_save.connect(_ruled.invalidate, sender=PolicyRule, dispatch_uid="tenant_policy_rule_saved")
post_delete.connect(_ruled.invalidate, sender=PolicyRule, dispatch_uid="tenant_policy_rule_deleted")


class TenantRules:
    """``TenantPolicy`` over the tenant's enabled policy rules."""

    def check(self, name: str, inputs: dict, context: ToolContext) -> Err | None:
        if not _ruled.cover(context.tenant_id, name):
            return None
        capabilities = frozenset(context.capabilities or ()) or capabilities_for(caller_user(context))
        violations = check_policies(
            name, tenant_id=context.tenant_id, capabilities=capabilities, succeeded_tools=set(), calls_so_far=0
        )
        blocked = [violation for violation in violations if violation.blocking]
        return Err(f"refused by policy: {blocked[0].detail}", "PolicyBlocked") if blocked else None

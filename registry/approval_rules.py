"""Which calls wait for a person's approval, and the gate's rule that makes them wait.

Staff choose them as data (``registry.models.ApprovalRule``, in the admin): one tool by
name, MCP tools that may destroy (``destructiveHint``), tools that write, or every
tool, for one tenant or for all. ``check`` is one rule of the registry's gate
(registry.gate), so it meets every call whatever path it came by: a chat turn, a
sandboxed program's inner ``call_tool``, the command line, a REST view, the MCP
endpoint.

A call a rule covers, made without an approval, does not run: ``check`` stores a
PendingApproval of its exact arguments (registry.approvals), tells the caller's gate
(``CallGate.awaiting``: the turn shows the card and pauses) and answers an
``ApprovalPending`` Err the model reads. The person's decision runs the call with
``approvals.context_for(row)``; ``check`` then lets it through only after
``approvals.claim`` took the row for these exact arguments, once.

Cost: the enabled rules are read at most every ``REFRESH_SECONDS`` (at once after a
rule is saved in this process, or in another one: the process bus, eunice/bus.py).
The gate asks ``covers_tenant`` first, a set lookup, so a call of a tenant no rule
names pays nothing more.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save

from eunice import bus
from registry import approvals
from registry.context import ToolContext
from registry.contract import Err
from registry.models import (
    ALL_TENANTS,
    ApprovalRule,
    ApprovalRuleKind,
    ApprovalSource,
    ToolDefinition,
    ToolType,
)
from registry.tenancy import tenant_of
from registry.validation import InputError, validator_for

REFRESH_SECONDS = 2.0
RULES_CHANGED = "registry.approval_rules_changed"
# Tools that ask for the person's approval themselves (their own card, their own claim).
ASKS_ITSELF = frozenset({"install_mcp_server"})


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: str
    tool_name: str
    timeout_seconds: int | None
    note: str


class _Rules:
    """The enabled rules by tenant, and the MCP tools' annotations when a rule needs them."""

    def __init__(self) -> None:
        self.by_tenant: dict[str, tuple[Rule, ...]] = {}
        self.tenants: frozenset[str] = frozenset()
        self.annotations: dict[str, dict] = {}
        self.due = float("-inf")
        self._lock = threading.Lock()

    def refresh(self) -> None:
        with self._lock:
            due = time.monotonic() + REFRESH_SECONDS
            by_tenant: dict[str, list[Rule]] = {}
            fields = ("tenant_id", "name", "kind", "tool_name", "timeout_seconds", "note")
            for tenant, *rest in ApprovalRule.objects.filter(enabled=True).values_list(*fields):
                by_tenant.setdefault(tenant, []).append(Rule(*rest))
            annotations: dict[str, dict] = {}
            if any(
                r.kind in (ApprovalRuleKind.MCP_DESTRUCTIVE, ApprovalRuleKind.WRITES)
                for v in by_tenant.values()
                for r in v
            ):
                rows = ToolDefinition.objects.filter(tool_type=ToolType.MCP, deleted_at__isnull=True)
                for name, results in rows.values_list("name", "test_results"):
                    remote = (results or {}).get("remote") or {}
                    found = remote.get("annotations")
                    annotations[name] = found if isinstance(found, dict) else {}
            self.by_tenant = {tenant: tuple(rules) for tenant, rules in by_tenant.items()}
            self.tenants = frozenset(by_tenant)
            self.annotations = annotations
            self.due = due

    def current(self) -> _Rules:
        """The rules, read again when due, but never on an event loop, where Django refuses
        a query: a call checked there was judged fresh a moment before
        (``covers_tenant``), and may have become due since, under load. It uses the rules
        as they were; the next call off the loop reads them again."""
        if time.monotonic() > self.due and not _on_event_loop():
            self.refresh()
        return self


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_rules = _Rules()


def forget(*_: object, **__: object) -> None:
    """Read the rules again at the next call (one was saved or deleted here or in another process)."""
    from registry import gate

    _rules.due = float("-inf")
    gate.forget_ruled_tools()


def _changed(**_: object) -> None:
    forget()
    bus.publish_on_commit(RULES_CHANGED)


post_save.connect(_changed, sender=ApprovalRule, dispatch_uid="approval_rules_saved")
post_delete.connect(_changed, sender=ApprovalRule, dispatch_uid="approval_rules_deleted")
bus.on(RULES_CHANGED)(forget)
bus.on_reconnect(forget)


def asks_nobody_without_a_query(tenant_id: str) -> bool:
    """Whether ``check`` is sure to pass a call of ``tenant_id`` without a query: the rules
    are fresh and none is for that tenant (or for every tenant). For calls that run on an
    event loop (``gate.concerns_without_a_query``)."""
    rules = _rules
    if time.monotonic() > rules.due:
        return False
    return tenant_id not in rules.tenants and ALL_TENANTS not in rules.tenants


def tenants() -> frozenset[str]:
    """The tenants (``*``: every tenant) some enabled rule is for; the gate keeps it a moment."""
    return _rules.current().tenants


def rule_for(registry: Any, name: str, tenant_id: str) -> Rule | None:
    """The first enabled rule that makes a call of ``name`` by ``tenant_id`` wait, or None."""
    rules = _rules.current()
    candidates = rules.by_tenant.get(tenant_id, ()) + rules.by_tenant.get(ALL_TENANTS, ())
    for rule in candidates:
        if rule.kind == ApprovalRuleKind.ALL or (rule.kind == ApprovalRuleKind.TOOL and rule.tool_name == name):
            return rule
        if rule.kind in (ApprovalRuleKind.MCP_DESTRUCTIVE, ApprovalRuleKind.WRITES):
            definition = registry.definitions().get(name)
            if definition is not None and _covered(rule.kind, definition.tool_type, rules.annotations.get(name)):
                return rule
    return None


def _covered(kind: str, tool_type: str, annotations: dict | None) -> bool:
    """MCP's hints as the specification defaults them: a tool that does not say it only
    reads may write, and one that may write is destructive unless it says it is not."""
    if tool_type == ToolType.MCP:
        hints = annotations or {}
        writes = hints.get("readOnlyHint") is not True
        if kind == ApprovalRuleKind.WRITES:
            return writes
        return writes and hints.get("destructiveHint") is not False
    return kind == ApprovalRuleKind.WRITES and tool_type == ToolType.CUSTOM


def check(registry: Any, name: str, inputs: dict, context: ToolContext) -> Err | None:
    """The gate's rule: an approved run passes once with its exact arguments; a call a rule
    covers, made without one, waits for the person (see the module docstring)."""
    if context.approval_id:
        return _approved_run(name, inputs, context)
    if name in ASKS_ITSELF:
        return None
    rule = rule_for(registry, name, context.tenant_id)
    if rule is None:
        return None
    definition = registry.definitions().get(name)
    if definition is None or not definition.callable_by(context.tenant_id):
        return None  # the registry answers an unknown tool itself
    try:
        validator_for(definition.input_schema, definition.schema_key)(inputs)
    except (InputError, RecursionError):
        return None  # an invalid call is answered with its Hint, and nobody is asked
    return _ask(rule, name, inputs, context)


def _approved_run(name: str, inputs: dict, context: ToolContext) -> Err | None:
    source = approvals.find(context.approval_id, context.tenant_id).values_list("source", flat=True).first()
    if source == ApprovalSource.TOOL:
        return None  # the tool claims its own approval
    try:
        approvals.claim(context, name, inputs)
    except approvals.ApprovalConflict as exc:
        return Err(f"not run: {exc}", "ApprovalConflict")
    return None


def _ask(rule: Rule, name: str, inputs: dict, context: ToolContext) -> Err:
    person = _person(context.user_id)
    if person is None or tenant_of(person) != context.tenant_id:
        return Err(
            f"{name} needs a person's approval (rule {rule.name!r}) and no signed-in person of the tenant is "
            "behind this call to ask; it did not run",
            "ApprovalRequired",
        )
    shown = {"title": f"Run {name}?", "tool": name, "arguments": inputs, "rule": rule.name}
    if rule.note:
        shown["note"] = rule.note
    try:
        row = approvals.request_approval(
            acting_user=person,
            tenant_id=context.tenant_id,
            conversation_id=str(context.conversation_id or ""),
            tool_name=name,
            arguments=dict(inputs),
            shown=shown,
            source=ApprovalSource.RULE,
            tool_use_id=context.tool_use_id,
            ttl_seconds=rule.timeout_seconds,
        )
    except TypeError:
        return Err(f"{name}'s arguments cannot be stored for approval (not JSON); it did not run", "ApprovalRequired")
    awaiting = getattr(context.gate, "awaiting", None) or context.awaiting
    if awaiting is not None:
        awaiting(approvals.card(row))
    where = "in the chat page" if context.conversation_id else "(GET /api/approvals/?status=pending)"
    return Err(
        f"{name} has not run: it waits for the person's approval (rule {rule.name!r}). They see this call with its "
        f"arguments {where} and approve, edit or reject it; the conversation goes on with their decision. Do not "
        f"call it again; tell the user it is waiting for them. Approval id {row.pk}.",
        "ApprovalPending",
    )


def _person(user_id: str) -> Any:
    """The active user a context names by primary key or username, or None."""
    if not user_id:
        return None
    users = get_user_model().objects.filter(is_active=True)
    found = users.filter(pk=int(user_id)) if str(user_id).isdigit() else users.filter(username=user_id)
    return found.first()

"""Policy rules checked before a tool runs, and how violations are worded.

Three kinds of rule (``PolicyRule.kind``), each for one tool:

- ``requires_prior_tool``: ``parameter`` names a tool that must have run
  successfully earlier in the conversation (e.g. preview data before analysing it);
- ``requires_capability``: the caller must hold the capability ``parameter``
  (a Django permission ``app.codename``, ``group:NAME`` or ``staff``);
- ``max_calls_per_conversation``: at most ``parameter`` calls per conversation.

A rule's ``action`` is ``warn`` (the call runs and the warning rides on its
result) or ``block`` (the call is refused). Repeated violations of the same
rule in a conversation get more emphatic wording: the count is the
conversation's, kept in the database (``PolicyViolationTally``) across its
turns and server processes, and raised atomically (``count_violation``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from conversations.models import Observation, PolicyRule, PolicyViolationTally
from conversations.observations import POLICY_VIOLATION, increment


@dataclass(frozen=True, slots=True)
class Violation:
    rule_id: int
    rule_name: str
    kind: str
    blocking: bool
    detail: str
    occurrence: int = 1  # 1st, 2nd, 3rd… violation of this rule in the conversation


def check_policies(
    tool_name: str,
    *,
    tenant_id: str,
    capabilities: frozenset[str],
    succeeded_tools: set[str],
    calls_so_far: int,
) -> list[Violation]:
    """The rules ``tool_name`` would break if it ran now (one query)."""
    violations = []
    for rule in PolicyRule.objects.active_for(tenant_id, tool_name):
        detail = _broken(rule, capabilities, succeeded_tools, calls_so_far)
        if detail:
            violations.append(Violation(rule.id, rule.name, rule.kind, rule.action == PolicyRule.Action.BLOCK, detail))
    return violations


def count_violation(violation: Violation, *, conversation_id: str, tenant_id: str, user_id: str) -> int:
    """Count one more violation of the rule, in the conversation and in the user's tally;
    which violation of it in the conversation this is (1 for the first).

    Each count is raised by an UPDATE ... SET count = count + 1 (F()), which the
    database serialises, so violations counted at once (parallel tool calls,
    two processes) are all counted, and each gets its own occurrence: the read
    of the new value is in the same transaction as the row's lock.
    """
    with transaction.atomic():
        increment(PolicyViolationTally, {"conversation_id": conversation_id, "rule_id": violation.rule_id})
        person = {"tenant_id": tenant_id, "user_id": user_id}
        increment(
            Observation, {**person, "kind": POLICY_VIOLATION, "key": violation.rule_name}, updated_at=timezone.now()
        )
        return (
            PolicyViolationTally.objects.filter(conversation_id=conversation_id, rule_id=violation.rule_id)
            .values_list("count", flat=True)
            .get()
        )


def _broken(rule: PolicyRule, capabilities: frozenset[str], succeeded: set[str], calls: int) -> str:
    why = f" ({rule.message})" if rule.message else ""
    if rule.kind == PolicyRule.Kind.REQUIRES_PRIOR_TOOL and rule.parameter not in succeeded:
        return f"run {rule.parameter} first{why}"
    if rule.kind == PolicyRule.Kind.REQUIRES_CAPABILITY and rule.parameter not in capabilities:
        return f"this needs the capability {rule.parameter!r}, which the user does not have{why}"
    if rule.kind == PolicyRule.Kind.MAX_CALLS:
        limit = int(rule.parameter)
        if calls >= limit:
            return f"it may run at most {limit} time(s) per conversation{why}"
    return ""


def format_policy_warnings(violations: list[Violation]) -> str:
    """The text the model reads about the rules it broke, firmer each time."""
    lines = []
    for v in violations:
        if v.blocking:
            lines.append(f"⛔ policy {v.rule_name!r}: refused — {v.detail}.")
        elif v.occurrence == 1:
            lines.append(f"⚠ policy {v.rule_name!r}: {v.detail}.")
        elif v.occurrence == 2:
            lines.append(f"⚠ policy {v.rule_name!r} again (2nd time): {v.detail}. Please follow it.")
        else:
            lines.append(
                f"⚠ STOP. You have skipped policy {v.rule_name!r} {v.occurrence} times: {v.detail}. "
                "Do that before anything else."
            )
    return "\n".join(lines)

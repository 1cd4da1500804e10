"""A call prepared on an event loop (an MCP tool's on-loop path) is only prepared there when
the gate needs no query: otherwise it takes a database thread, since a query on the loop
raises SynchronousOnlyOperation. The fault suite found the case of a person's approval."""

import asyncio

import pytest

from registry import approval_rules, gate
from registry.context import ToolContext
from registry.models import ApprovalRule, ApprovalRuleKind
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


class Planned:
    """A caller's gate that decided every call of the turn beforehand."""

    def planned(self, tool_use_id):
        return True


def on_loop(tenant: str = TENANT, **fields) -> bool | None:
    return gate.concerns_without_a_query("mcp_demo_add", ToolContext(tenant_id=tenant, **fields))


def test_with_fresh_rules_for_other_tenants_only_a_call_is_prepared_on_the_loop():
    ApprovalRule.objects.create(name="theirs", tenant_id=OTHER_TENANT, kind=ApprovalRuleKind.ALL)
    approval_rules.tenants()  # read the rules, as a call on a database thread does
    gate.forget_ruled_tools()
    gate.concerns("mcp_demo_add", ToolContext(tenant_id=TENANT))
    assert on_loop() is False
    assert on_loop(gate=Planned()) is True


def test_a_tenant_with_an_approval_rule_is_prepared_on_a_database_thread():
    ApprovalRule.objects.create(name="ours", tenant_id=TENANT, kind=ApprovalRuleKind.ALL)
    approval_rules.tenants()
    assert on_loop() is None
    assert on_loop(gate=Planned()) is None  # asking the person stores a pending approval


def test_rules_due_a_re_read_send_the_call_to_a_database_thread():
    approval_rules.tenants()
    approval_rules.forget()
    assert on_loop(gate=Planned()) is None


def test_an_approved_run_is_prepared_on_a_database_thread():
    approval_rules.tenants()
    assert on_loop(gate=Planned(), approval_id="a1") is None  # claiming the approval is a query


def test_rules_that_fall_due_while_a_call_is_checked_on_the_loop_are_used_as_they_were():
    """A call judged fresh by `covers_tenant` may reach `rule_for` after the rules fell due
    (under load: stop 53's CI). On the loop they are not read again, which Django refuses."""
    approval_rules._rules.refresh()
    approval_rules._rules.due = float("-inf")

    async def checked_on_the_loop():
        return approval_rules.rule_for(None, "plan", TENANT)

    assert asyncio.run(checked_on_the_loop()) is None
    assert approval_rules._rules.due == float("-inf")  # read again at the next call off the loop
    assert approval_rules.rule_for(None, "plan", TENANT) is None and approval_rules._rules.due > 0

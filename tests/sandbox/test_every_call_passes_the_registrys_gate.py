"""One pre-dispatch gate: a call that does not come from the chat dispatcher (a sandboxed
program's inner call_tool, execute_tool with a context) meets the same policy and scope rules."""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import Conversation, ConversationEvent, PolicyRule
from conversations.state import DispatchState
from conversations.turns import begin_turn
from registry.context import ToolContext
from registry.contract import Err
from registry.models import SandboxRun
from registry.registry import get_registry
from registry.sandbox.bridge import Allowance, Scope
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def turn():
    """A turn in progress in a conversation of a user who is not in the finance group."""
    user = get_user_model().objects.create_user("ann", password="pw")
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user)
    runtime = begin_turn(conversation, user=user, user_message="go")
    state = DispatchState.for_conversation(conversation)
    yield runtime, state
    state.cancel.release()


def dispatch(turn, name):
    runtime, state = turn
    return async_to_sync(dispatch_tool_calls)([{"id": f"toolu_{name}", "name": name, "input": {}}], runtime, state)[0]


def finance_only(tool_name):
    PolicyRule.objects.create(
        name="finance only",
        tool_name=tool_name,
        kind="requires_capability",
        parameter="group:finance",
        action="block",
        tenant_id=TENANT,
    )


def test_a_programs_inner_call_is_refused_by_the_policy_that_refuses_the_model(approved_tool, turn):
    approved_tool("wire_money", "result = 'money wired'")
    approved_tool("pay_later", "result = 'outer saw: ' + call_tool('wire_money', {})", dependencies=["wire_money"])
    finance_only("wire_money")

    assert "refused by policy" in dispatch(turn, "wire_money").content
    result = dispatch(turn, "pay_later")
    assert "money wired" not in result.content
    assert "refused by policy: this needs the capability 'group:finance'" in text(result.result)
    assert not SandboxRun.objects.filter(tool_name="wire_money", ok=True).exists()
    violations = ConversationEvent.objects.filter(event_type="policy_violation", data__tool="wire_money")
    assert violations.count() == 2


def test_a_call_with_a_sandboxed_callers_scope_is_checked_by_the_registry_itself(approved_tool):
    approved_tool("private", "result = 'private ran'")
    scope = Scope(depth=1, allowance=Allowance(10, 10, 5), allowed=frozenset())
    result = get_registry().execute_tool("private", {}, ToolContext(tenant_id=TENANT, sandbox=scope))
    assert result.error is not None and "does not declare 'private'" in result.content
    assert not SandboxRun.objects.filter(tool_name="private").exists()


def test_the_callers_gate_stops_a_direct_call_before_its_handler_runs(approved_tool):
    approved_tool("private", "result = 'private ran'")

    class Closed:
        def check(self, name, inputs, context):
            return Err(f"refused: {name} is closed today", "PolicyBlocked")

    result = get_registry().execute_tool("private", {}, ToolContext(tenant_id=TENANT, gate=Closed()))
    assert result.content.startswith("✗ error (PolicyBlocked): refused: private is closed today")
    assert not SandboxRun.objects.filter(tool_name="private").exists()

"""A sandboxed program's inner call_tool meets the same approval rule as the model's call:
it does not run, the person gets the card in the conversation the program runs in, the
turn pauses, and an approval runs exactly the inner call that was shown (issue 34)."""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from conversations import approvals as decisions
from conversations.dispatcher import dispatch_tool_calls
from conversations.models import Conversation
from conversations.state import DispatchState
from conversations.turns import begin_turn
from registry.models import ApprovalRule, PendingApproval, SandboxRun, TenantMembership
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def turn():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user)
    runtime = begin_turn(conversation, user=user, user_message="go")
    state = DispatchState.for_conversation(conversation)
    yield runtime, state
    state.cancel.release()


def test_a_programs_inner_call_waits_for_the_persons_approval(approved_tool, turn):
    approved_tool("wire_money", "result = 'money wired'")
    approved_tool("pay_later", "result = 'outer saw: ' + call_tool('wire_money', {})", dependencies=["wire_money"])
    ApprovalRule.objects.create(name="money moves need a person", tenant_id=TENANT, tool_name="wire_money")
    runtime, state = turn

    block = {"id": "toolu_pay", "name": "pay_later", "input": {}}
    result = async_to_sync(dispatch_tool_calls)([block], runtime, state)[0]
    assert "money wired" not in result.content
    assert "wire_money has not run: it waits for the person's approval" in text(result.result)
    assert not SandboxRun.objects.filter(tool_name="wire_money").exists()
    row = PendingApproval.objects.get()
    assert (row.tool_name, row.conversation_id, row.source) == ("wire_money", runtime.conversation.pk, "rule")
    assert [card["approval_id"] for card in runtime.awaiting] == [str(row.pk)]  # the turn pauses

    card = decisions.decide(str(row.pk), "approve", acting_user=runtime.user, expected_hash=row.args_hash)
    assert "money wired" in card["outcome"] and card["resume"]["text"].startswith("[Approval] I approved wire_money")

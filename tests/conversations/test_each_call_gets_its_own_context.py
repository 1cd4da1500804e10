"""A turn builds the part of the ToolContext its calls share once, and each call's own part per
call (``Runtime.tool_context``). Every field a handler reads is still its call's: its id, its
progress, its cancel, gate and surface reason; and the run's, for a delegated task's run and
after a field of the run was set anew.
"""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from conversations.dispatcher import dispatch_tool_calls
from conversations.loop import _subtask_runtime
from conversations.models import Conversation
from conversations.recording import ListDisplay
from conversations.state import DispatchState
from conversations.turns import begin_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ann", password="pw")


@pytest.fixture
def runtime(user):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user)
    return begin_turn(conversation, user=user, user_message="go", display=ListDisplay(), interactive=True)


def test_calls_dispatched_together_each_see_their_own_id_and_progress(runtime, make_tool):
    seen = {}

    def spy(inputs, context):
        seen[inputs["n"]] = context
        context.progress(f"working on {inputs['n']}")
        return "ok"

    make_tool("spy", spy, input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})
    state = DispatchState.for_conversation(runtime.conversation)
    blocks = [{"id": f"toolu_{n}", "name": "spy", "input": {"n": n}} for n in (1, 2)]
    try:
        async_to_sync(dispatch_tool_calls)(blocks, runtime, state)
    finally:
        state.cancel.release()

    assert {n: context.tool_use_id for n, context in seen.items()} == {1: "toolu_1", 2: "toolu_2"}
    assert seen[1].cancel is not seen[2].cancel and seen[1].cancel.turn is seen[2].cancel.turn is state.cancel
    progress = [(c["tool_use_id"], c["message"]) for c in runtime.log.ctx.display.chunks if c["type"] == "progress"]
    assert sorted(progress) == [("toolu_1", "working on 1"), ("toolu_2", "working on 2")]
    assert seen[1].questions is not None and seen[1].budget is runtime.budget


def test_each_call_has_its_own_gate_cancel_and_surface_reason(runtime):
    gate, cancel = object(), object()
    first = runtime.tool_context("toolu_a", "plan", cancel, gate, "anchor")  # type: ignore[arg-type]
    second = runtime.tool_context("toolu_b", "plan")
    assert (first.tool_use_id, first.cancel, first.gate, first.surface_reason) == ("toolu_a", cancel, gate, "anchor")
    assert (second.tool_use_id, second.cancel, second.gate, second.surface_reason) == ("toolu_b", None, None, "")
    assert (first.tenant_id, first.user_id, first.conversation_id) == (
        second.tenant_id,
        second.user_id,
        second.conversation_id,
    )


def test_a_delegated_tasks_calls_see_its_run_not_its_parents(runtime):
    parent = runtime.tool_context("toolu_a", "plan")
    child = _subtask_runtime(runtime, budget_usd=0.5).tool_context("toolu_b", "plan")
    assert (parent.mode, parent.depth, parent.questions is None) == (runtime.mode, 0, False)
    assert (child.mode, child.depth, child.questions, child.budget_limit) == ("delegate", 1, None, 0.5)
    assert child.budget is not parent.budget and child.budget.parent is parent.budget
    assert child.namespace_id != parent.namespace_id


def test_a_field_of_the_run_set_anew_reaches_the_next_call(runtime):
    before = runtime.tool_context("toolu_a", "plan")
    runtime.datasets = {"sales": object()}
    runtime.mode = "agentic"
    after = runtime.tool_context("toolu_b", "plan")
    assert (sorted(before.datasets), before.mode) == ([], "chat")
    assert (sorted(after.datasets), after.mode) == (["sales"], "agentic")

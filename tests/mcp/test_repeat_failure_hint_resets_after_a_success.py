"""The "this exact call has failed N times" hint counts failures since the last success."""

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import Conversation
from conversations.state import DispatchState
from conversations.turns import begin_turn
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

HINT = "Consider a different approach"


def test_a_success_resets_the_count_of_an_identical_call(make_tool):
    failing = {"now": True}

    def flaky(inputs, context):
        if failing["now"]:
            raise ConnectionError("upstream refused")
        return {"ok": True}

    make_tool("fetch_quotes", flaky)
    user = get_user_model().objects.create_user("ann")
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user)
    runtime = begin_turn(conversation, user=user, user_message="go")
    state = DispatchState.for_conversation(conversation)
    try:

        def once(index):
            block = {"id": f"toolu_{index}", "name": "fetch_quotes", "input": {"symbol": "X"}}
            # A different call in between keeps the loop guard (identical calls in a row) out of it.
            other = {"id": f"toolu_o{index}", "name": "fetch_quotes", "input": {"symbol": f"Y{index}"}}
            first = async_to_sync(dispatch_tool_calls)([block], runtime, state)[0]
            async_to_sync(dispatch_tool_calls)([other], runtime, state)
            return first

        for index in range(3):
            once(index)
        assert HINT in once(3).content  # failed 3 times before: the hint comes
        failing["now"] = False
        assert once(4).result.error is None
        failing["now"] = True
        assert HINT not in once(5).content, "one failure after a success is not 'failed 5 times'"
        conversation.refresh_from_db()
        same = [a for a in conversation.failed_approaches if a["args_hash"] == state.failed_approaches[0]["args_hash"]]
        assert [a["attempts"] for a in same] == [1], "the stored count restarted after the success too"
    finally:
        state.cancel.release()

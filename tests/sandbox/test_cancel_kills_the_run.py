"""A cancelled custom-tool call stops the work itself, not just the waiting."""

import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from conversations.dispatcher import dispatch_tool_call
from conversations.models import Conversation
from conversations.state import DispatchState, request_cancel
from conversations.turns import begin_turn
from registry.models import SandboxRun

pytestmark = pytest.mark.django_db(transaction=True)


def test_cancelling_a_running_custom_tool_kills_its_sandbox_child(approved_tool, settings):
    settings.SANDBOX = {**settings.SANDBOX, "CPU_SECONDS": 30, "WALL_SECONDS": 30.0}
    approved_tool("spin", "while True:\n    pass")
    conversation = Conversation.objects.create(tenant_id="acme")
    runtime = begin_turn(conversation, user_message="spin")
    state = DispatchState.for_conversation(conversation)

    def cancel_soon():
        time.sleep(0.5)
        try:
            request_cancel(conversation)
        finally:
            connection.close()

    threading.Thread(target=cancel_soon).start()
    started = time.monotonic()
    result = async_to_sync(dispatch_tool_call)({"id": "t1", "name": "spin", "input": {}}, runtime, state)
    # Whichever notices first answers: the dispatcher's watcher or the sandbox's own kill.
    assert result.result.content.startswith(("✗ error (Cancelled)", "✗ error (sandbox:cancelled)"))
    deadline = time.monotonic() + 5
    while not SandboxRun.objects.filter(tool_name="spin").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the worker thread records the run right after the child is killed
    run = SandboxRun.objects.get(tool_name="spin")
    assert run.stopped_by == "cancelled"
    assert run.wall_ms < 3000, "the child ran on towards its wall limit instead of being killed"
    assert time.monotonic() - started < 3
    state.cancel.release()

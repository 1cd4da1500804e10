"""Sandbox faults inside real turns: a run's child SIGKILLed, the zygote SIGKILLed, a CPU
loop, a memory bomb, a run past the wall clock. Each ends the tool call with an error
naming what stopped it, the turn goes on, and the next run works."""

import os
import signal
import threading

import pytest
from asgiref.sync import async_to_sync

from conversations.loop import run_turn
from conversations.models import ConversationEvent, TurnRecord, WorkingSetEntry
from registry.models import SandboxRun
from registry.sandbox import service
from tests.faults.operator import children, wait_for

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

BOUND_SECONDS = 15  # generous: the machine is shared


@pytest.fixture
def tools(approved_tool, conversation, settings):
    """An approved `fault` tool (the code under test) and an `answer` tool, offered to the model."""

    def make(code: str, **limits):
        settings.SANDBOX = {**settings.SANDBOX, **limits}
        approved_tool("fault", code)
        approved_tool("answer", "result = 6 * 7")
        for name in ("fault", "answer"):
            WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)

    return make


def turn_calling(tool: str, expected: str) -> list[dict]:
    return [
        {"tool_uses": [{"name": tool, "input": {}, "id": f"toolu_{tool}"}]},
        {"text": [f"{tool} answered."], "expect": {"tool_result_contains": expected}},
    ]


def run(conversation, user, text):
    return async_to_sync(run_turn)(conversation, text=text, user=user)


def result_of(conversation, turn: int) -> str:
    (event,) = ConversationEvent.objects.filter(conversation=conversation, turn=turn, event_type="tool_result")
    return event.data["content"]


def assert_the_next_run_works(conversation, user) -> None:
    assert run(conversation, user, "and now?").text == "answer answered."
    assert "42" in result_of(conversation, 2)
    assert list(TurnRecord.objects.filter(conversation=conversation).values_list("status", flat=True)) == [
        "finished",
        "finished",
    ]


def kill_when_running(pick) -> threading.Thread:  # noqa: ANN001
    """SIGKILL what ``pick(zygote pid)`` names, as soon as a run's child exists."""

    def kill() -> None:
        zygote = service.zygote().process.pid
        if wait_for(lambda: children(zygote), BOUND_SECONDS, 0.02):
            for pid in pick(zygote):
                os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def test_a_runs_child_sigkilled_mid_run_fails_the_call_and_the_next_run_works(model, tools, conversation, user):
    tools("while True:\n    pass", CPU_SECONDS=60, WALL_SECONDS=60.0)
    model([*turn_calling("fault", "killed from outside the sandbox"), *turn_calling("answer", "42")])
    service.zygote()  # started before the turn, so the killer finds it
    killer = kill_when_running(children)

    assert run(conversation, user, "spin").text == "fault answered."

    killer.join(BOUND_SECONDS)
    assert result_of(conversation, 1).startswith("✗ error") and "Traceback" not in result_of(conversation, 1)
    spin = SandboxRun.objects.get(tool_name="fault")
    assert spin.stopped_by == "os:killed"
    assert spin.wall_ms < BOUND_SECONDS * 1000
    assert_the_next_run_works(conversation, user)


def test_the_zygote_sigkilled_mid_run_fails_the_call_and_the_next_run_starts_a_new_one(
    model, tools, conversation, user
):
    tools("while True:\n    pass", CPU_SECONDS=60, WALL_SECONDS=60.0)
    model([*turn_calling("fault", "✗ error"), *turn_calling("answer", "42")])
    first = service.zygote().process.pid
    killer = kill_when_running(lambda zygote: [zygote])

    assert run(conversation, user, "spin").text == "fault answered."

    killer.join(BOUND_SECONDS)
    assert "Traceback" not in result_of(conversation, 1)
    assert SandboxRun.objects.get(tool_name="fault").wall_ms < BOUND_SECONDS * 1000
    assert_the_next_run_works(conversation, user)
    assert service.zygote().process.pid != first


@pytest.mark.parametrize(
    ("code", "limits", "says", "layer"),
    [
        (
            "while True:\n    pass",
            {"CPU_SECONDS": 1, "WALL_SECONDS": float(BOUND_SECONDS)},
            "more than 1 s of CPU",
            "os:cpu",
        ),
        (
            "result = np.ones((60000, 60000)).sum()",
            {"CPU_SECONDS": 5, "WALL_SECONDS": 10.0},
            "MemoryError",
            "os:memory",
        ),
    ],
    ids=["a-cpu-loop", "a-memory-bomb"],
)
def test_a_resource_bomb_is_stopped_naming_the_limit_and_the_next_run_works(
    model, tools, conversation, user, code, limits, says, layer
):
    tools(code, **limits)
    model([*turn_calling("fault", says), *turn_calling("answer", "42")])

    assert run(conversation, user, "bomb").text == "fault answered."

    assert f"[stopped by: {layer}]" in result_of(conversation, 1)
    run_row = SandboxRun.objects.get(tool_name="fault")
    assert run_row.stopped_by == layer and run_row.wall_ms < BOUND_SECONDS * 1000
    assert_the_next_run_works(conversation, user)


def test_a_run_past_the_wall_clock_is_stopped_within_the_limit_and_a_second(model, tools, conversation, user):
    tools("while True:\n    pass", CPU_SECONDS=60, WALL_SECONDS=2.0)
    model([*turn_calling("fault", "longer than 2 s"), *turn_calling("answer", "42")])

    assert run(conversation, user, "spin").text == "fault answered."

    run_row = SandboxRun.objects.get(tool_name="fault")
    assert run_row.stopped_by == "supervisor:wall" and run_row.wall_ms < (2 + 1) * 1000
    assert_the_next_run_works(conversation, user)

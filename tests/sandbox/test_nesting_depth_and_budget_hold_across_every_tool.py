"""Class 3: a custom tool that re-enters itself through a system tool that runs code
(custom → analyze_data → custom → …) meets the same depth cap as direct nesting, and
every run in a call tree shares one call_tool budget."""

import pytest

from conversations.models import Conversation
from registry.models import SandboxRun
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def in_conversation(call, settings):
    settings.DATA = {**settings.DATA, "ANALYZE_DATA_FOR": "all"}
    conversation = Conversation.objects.create(id="conv-nesting", tenant_id=TENANT)
    return lambda name, **inputs: call(name, context={"conversation_id": conversation.id}, **inputs)


def test_custom_to_analyze_data_to_custom_stops_at_the_depth_cap(approved_tool, in_conversation, settings):
    hop = "result = call_tool('analyze_data', {'code': \"result = call_tool('hop', {})\"})"
    approved_tool("hop", hop, dependencies=["analyze_data", "hop"])
    result = in_conversation("hop")
    assert "nest at most 3 deep" in result.content
    started = SandboxRun.objects.exclude(stopped_by="policy")
    # hop (0) → analyze_data (1) → hop (2) → analyze_data (3); the fifth run is refused.
    assert started.count() == settings.SANDBOX["MAX_DEPTH"] + 1
    assert SandboxRun.objects.filter(stopped_by="policy").count() == 1


def test_analyze_data_called_from_a_custom_tool_may_call_only_what_that_tool_declares(approved_tool, in_conversation):
    approved_tool("private", "result = 'private ran'")
    approved_tool(
        "via_analysis",
        "result = call_tool('analyze_data', {'code': \"result = call_tool('private', {})\"})",
        dependencies=["analyze_data"],
    )
    result = in_conversation("via_analysis")
    assert "does not declare 'private'" in result.content
    assert not SandboxRun.objects.filter(tool_name="private").exists()


def test_every_run_in_a_call_tree_shares_one_call_budget(approved_tool, call, settings):
    settings.SANDBOX = {**settings.SANDBOX, "MAX_TOOL_CALLS": 5}
    approved_tool("leaf", "result = 'leaf'")
    approved_tool("middle", "result = [call_tool('leaf', {}) for _ in range(3)]", dependencies=["leaf"])
    approved_tool("top", "result = [call_tool('middle', {}) for _ in range(3)]", dependencies=["middle"])
    result = call("top")
    assert "used all their call_tool calls" in result.content
    calls_made = SandboxRun.objects.filter(tool_name__in=["middle", "leaf"]).count()
    assert calls_made == 5


def test_a_nested_run_gets_only_the_wall_time_its_tree_has_left(approved_tool, call, settings, language_layer_bypassed):
    settings.SANDBOX = {**settings.SANDBOX, "WALL_SECONDS": 4.0}
    approved_tool("sleeper", "import time\ntime.sleep(60)")
    approved_tool("spender", "import time\ntime.sleep(2)\nresult = call_tool('sleeper', {})", dependencies=["sleeper"])
    answer = call("spender").content
    # The sleeper is stopped when the tree's 4 s are up, not 4 s after it started,
    # so the spender lives to report it.
    assert "[stopped by: supervisor:wall]" in answer and "ran longer than 4 s" not in answer
    sleeper = SandboxRun.objects.get(tool_name="sleeper")
    assert sleeper.stopped_by == "supervisor:wall" and sleeper.wall_ms < 3000

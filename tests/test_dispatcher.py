"""The dispatcher, driven through its public functions with real tools."""

import time

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection

from conversations.dispatcher import (
    args_hash,
    dispatch_tool_call,
    dispatch_tool_calls,
    record_failed_approach,
    repeat_failure_hint,
)
from conversations.models import Conversation, ConversationEvent, Notification, Observation, PolicyRule, UsageLog
from conversations.state import DispatchState, request_cancel
from conversations.turns import begin_turn
from datacatalog.models import GeneratedFile
from registry.context import ToolContext
from registry.execlog import writer
from registry.models import ToolExecutionLog
from tests import handlers
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

NUMBER = {"type": "object", "properties": {"n": {"type": "integer"}, "explanation": {"type": "string"}}}
NAP = {"type": "object", "properties": {"seconds": {"type": "number"}}}


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ann", password="pw")


@pytest.fixture
def conversation(user):
    return Conversation.objects.create(tenant_id=TENANT, user=user)


@pytest.fixture
def run(conversation, user):
    """A turn in progress and the dispatcher state for it."""
    runtime = begin_turn(conversation, user=user, user_message="go")
    state = DispatchState.for_conversation(conversation)
    yield runtime, state
    state.cancel.release()


def block(name, index=0, **inputs):
    return {"id": f"toolu_{name}_{index}", "name": name, "input": inputs}


def dispatch(run_, *blocks):
    runtime, state = run_
    return async_to_sync(dispatch_tool_calls)(list(blocks), runtime, state)


def test_args_hash_is_a_stable_16_character_prefix_that_ignores_narration():
    a = args_hash("query", {"sql": "select 1", "limit": 5, "reasoning": "first"})
    b = args_hash("query", {"limit": 5, "sql": "select 1", "explanation": "second try"})
    assert a == b and len(a) == 16
    assert args_hash("query", {"sql": "select 2", "limit": 5}) != a


def test_the_fourth_identical_call_in_a_row_is_refused(run, make_tool):
    make_tool("count", handlers.echo, input_schema=NUMBER)
    results = [dispatch(run, block("count", i, n=1, explanation=f"attempt {i}"))[0] for i in range(4)]
    assert all(r.result.error is None for r in results[:3])
    assert results[3].result.content.startswith("✗ error (LoopGuard): refused: this is call 4 in a row")


def test_a_different_call_in_between_resets_the_loop_guard(run, make_tool):
    make_tool("count", handlers.echo, input_schema=NUMBER)
    for n in (1, 1, 1, 2, 1):
        assert dispatch(run, block("count", n, n=n))[0].result.error is None


def test_a_repeat_failure_hint_follows_the_third_failure_and_never_stops_the_call(run, make_tool):
    make_tool("fetch_prices", handlers.flaky)
    make_tool("count", handlers.echo, input_schema=NUMBER)
    results = []
    for i in range(4):
        results.append(dispatch(run, block("fetch_prices", i))[0])
        dispatch(run, block("count", i, n=i))  # in between, so the loop guard stays out of it
    assert "Consider a different approach" not in results[2].content
    assert (
        "has failed 3 times (last: upstream refused the connection). Consider a different approach."
        in results[3].content
    )
    assert results[3].result.content.startswith("✗ error (ConnectionError)")  # it still ran


def test_record_failed_approach_counts_attempts_of_the_same_call(conversation):
    state = DispatchState.for_conversation(conversation)
    for _ in range(3):
        record_failed_approach("t", "h1", "boom", state)
    record_failed_approach("t", "h2", "boom", state)
    assert [a["attempts"] for a in state.failed_approaches] == [3, 1]
    assert repeat_failure_hint("t", "h1", state) and not repeat_failure_hint("t", "h2", state)


def test_failed_approaches_are_kept_on_the_conversation(run, make_tool, conversation):
    make_tool("fetch_prices", handlers.flaky)
    dispatch(run, block("fetch_prices"))
    conversation.refresh_from_db()
    assert conversation.failed_approaches[0]["tool"] == "fetch_prices"


def test_a_group_of_calls_that_all_succeed_leaves_the_failed_approaches_unwritten(run, make_tool, conversation):
    make_tool("count", handlers.echo, input_schema=NUMBER)
    written_meanwhile = [{"tool": "elsewhere", "args_hash": "0" * 16, "reason": "x", "attempts": 1}]
    Conversation.objects.filter(pk=conversation.pk).update(failed_approaches=written_meanwhile)
    dispatch(run, block("count", n=1))
    conversation.refresh_from_db()
    assert conversation.failed_approaches == written_meanwhile  # nothing new to save, so nothing saved


def test_policy_warnings_escalate_on_each_violation(run, make_tool):
    make_tool("analyze", handlers.echo, input_schema=NUMBER)
    PolicyRule.objects.create(
        name="preview first", tool_name="analyze", kind="requires_prior_tool", parameter="preview"
    )
    texts = [dispatch(run, block("analyze", i, n=i))[0].content for i in range(3)]
    assert "⚠ policy 'preview first': run preview first." in texts[0]
    assert "again (2nd time)" in texts[1]
    assert "⚠ STOP. You have skipped policy 'preview first' 3 times" in texts[2]
    assert ConversationEvent.objects.filter(event_type="policy_violation").count() == 3
    assert Observation.objects.get(kind="policy_violation", key="preview first").count == 3


def test_a_prior_tool_satisfies_its_policy(run, make_tool):
    make_tool("preview", handlers.echo)
    make_tool("analyze", handlers.echo)
    PolicyRule.objects.create(
        name="preview first", tool_name="analyze", kind="requires_prior_tool", parameter="preview"
    )
    dispatch(run, block("preview"))
    assert "policy" not in dispatch(run, block("analyze"))[0].content


def test_a_blocking_capability_rule_refuses_and_logs_the_call(run, make_tool):
    make_tool("wire_money", handlers.echo)
    PolicyRule.objects.create(
        name="finance only",
        tool_name="wire_money",
        kind="requires_capability",
        parameter="group:finance",
        action="block",
    )
    result = dispatch(run, block("wire_money"))[0]
    assert result.result.content.startswith(
        "✗ error (PolicyBlocked): refused by policy: this needs the capability 'group:finance'"
    )
    writer().flush()
    assert ToolExecutionLog.objects.get(tool_name="wire_money").outcome_kind == "PolicyBlocked"


def test_a_user_with_the_capability_passes_the_rule(conversation, user, make_tool):
    user.groups.add(Group.objects.create(name="finance"))
    make_tool("wire_money", handlers.echo)
    PolicyRule.objects.create(
        name="finance only",
        tool_name="wire_money",
        kind="requires_capability",
        parameter="group:finance",
        action="block",
    )
    runtime = begin_turn(conversation, user=get_user_model().objects.get(pk=user.pk), user_message="pay")
    state = DispatchState.for_conversation(conversation)
    assert async_to_sync(dispatch_tool_call)(block("wire_money"), runtime, state).result.error is None


def test_a_per_conversation_cap_blocks_calls_past_it(run, make_tool):
    make_tool("send_sms", handlers.echo, input_schema=NUMBER)
    PolicyRule.objects.create(
        name="two texts", tool_name="send_sms", kind="max_calls_per_conversation", parameter="2", action="block"
    )
    results = [dispatch(run, block("send_sms", i, n=i))[0] for i in range(3)]
    assert [r.result.error is None for r in results] == [True, True, False]


def test_an_async_tool_and_a_blocking_tool_of_one_reply_run_at_the_same_time(run, make_tool):
    handlers.meeting.reset()
    make_tool("meet", handlers.meet, input_schema=NAP)
    make_tool("blocking_meet", handlers.blocking_meet, inline=False, input_schema=NAP)
    # Each waits (up to 30 s) for the other to arrive: one after the other, neither would.
    results = dispatch(run, block("meet", 1, seconds=30), block("blocking_meet", 2, seconds=30))
    assert [r.tool_use_id for r in results] == ["toolu_meet_1", "toolu_blocking_meet_2"]
    assert [r.result.error for r in results] == [None, None]


def test_a_sequential_tool_never_overlaps_others(run, make_tool, registry):
    make_tool("nap", handlers.nap, input_schema=NAP)
    make_tool("migrate_db", handlers.nap, input_schema=NAP)
    registry.register_handler("migrate_db", handlers.nap, sequential=True)
    started = time.monotonic()
    results = dispatch(
        run, block("nap", 1, seconds=0.3), block("migrate_db", 2, seconds=0.3), block("nap", 3, seconds=0.3)
    )
    assert time.monotonic() - started >= 0.85
    assert [r.tool_use_id for r in results] == ["toolu_nap_1", "toolu_migrate_db_2", "toolu_nap_3"]


def test_a_cancel_during_a_slow_tool_returns_long_before_the_tool_would_end(run, make_tool, conversation):
    import threading

    make_tool("nap", handlers.nap, input_schema=NAP)
    cancelled_at = {}

    def cancel_soon():
        time.sleep(0.3)
        cancelled_at["t"] = time.monotonic()
        try:
            request_cancel(conversation)
        finally:
            connection.close()  # this thread's own connection

    threading.Thread(target=cancel_soon).start()
    result = dispatch(run, block("nap", seconds=10))[0]
    latency = time.monotonic() - cancelled_at["t"]
    assert result.result.content == "✗ error (Cancelled): cancelled by the user before the tool finished"
    # the tool would nap 10 s; generous for a loaded machine (bench/cancel.py: 42–70 ms)
    assert latency < 1.0, f"stopped waiting {latency * 1000:.0f} ms after the cancel"
    writer().flush()
    assert ToolExecutionLog.objects.get(tool_name="nap").outcome_kind == "Cancelled"


def test_the_conversation_stays_usable_after_a_cancel(conversation, user, make_tool):
    make_tool("count", handlers.echo, input_schema=NUMBER)
    request_cancel(conversation)
    from conversations.state import clear_cancel

    clear_cancel(conversation)
    runtime = begin_turn(conversation, user=user, user_message="again")
    state = DispatchState.for_conversation(conversation)
    assert async_to_sync(dispatch_tool_call)(block("count", n=1), runtime, state).result.error is None


def test_exports_datasets_cards_and_cost_go_where_they_belong(run, make_tool):
    runtime, _ = run
    make_tool("report", handlers.with_side_channels)
    dispatch(run, block("report"))
    generated = GeneratedFile.objects.get()
    assert (generated.filename, generated.source_tool, generated.size_bytes) == ("report.csv", "report", 12)
    assert Notification.objects.get().kind == "export.ready"
    assert ConversationEvent.objects.filter(event_type="export").exists()
    assert runtime.datasets["sales"] == [{"region": "north", "total": 3}]
    assert [c["type"] for c in runtime.cards] == ["chart", "cited_answer"]
    assert runtime.cost.total == 0.25 and runtime.budget.spent == 0.25
    assert UsageLog.objects.get().cost_usd == 0.25


def test_an_export_outside_the_tenants_files_is_never_offered_for_download(run, make_tool, caplog):
    runtime, _ = run
    make_tool("leaky", handlers.exports_a_server_file)
    dispatch(run, block("leaky"))
    assert not GeneratedFile.objects.exists()
    assert runtime.cards == []  # no button to a download that is not there
    assert "tool leaky exported 'settings.py' from outside tenant" in caplog.text


def test_every_dispatched_call_is_logged_with_conversation_and_user(run, make_tool, conversation, user):
    make_tool("count", handlers.echo, input_schema=NUMBER)
    dispatch(run, block("count", n=1), block("no_such_tool"))
    writer().flush()
    rows = ToolExecutionLog.objects.order_by("tool_name").values_list("tool_name", "conversation_id", "user_id")
    assert list(rows) == [("count", conversation.pk, str(user.pk)), ("no_such_tool", conversation.pk, str(user.pk))]


def test_a_write_only_input_reaches_the_tool_but_neither_the_log_nor_the_events(run, make_tool):
    make_tool(
        "login",
        handlers.echo,
        input_schema={
            "type": "object",
            "properties": {"user": {"type": "string"}, "password": {"type": "string", "writeOnly": True}},
        },
    )
    runtime, _ = run
    result = dispatch(run, block("login", user="ann", password="hunter2"))[0]
    runtime.flush_events()
    writer().flush()

    assert "'password': 'hunter2'" in result.result.content  # the handler read it
    logged = ToolExecutionLog.objects.get(tool_name="login").input_data
    recorded = ConversationEvent.objects.get(event_type="tool_call").data["input"]
    assert logged == recorded == {"user": "ann", "password": "[redacted]"}


def test_handlers_receive_a_typed_context_of_their_turn(run, make_tool, user, conversation):
    seen = []

    def spy(inputs, context):
        seen.append(context)
        return "ok"

    make_tool("spy", spy)
    runtime, state = run
    dispatch(run, block("spy", reasoning="checking the context"))
    (context,) = seen
    assert isinstance(context, ToolContext)
    assert (context.tenant_id, context.user_id, context.conversation_id) == (
        conversation.tenant_id,
        str(user.pk),
        conversation.pk,
    )
    assert (context.tool_name, context.reasoning, context.tool_use_id) == ("spy", "checking the context", "toolu_spy_0")
    assert context.registry is runtime.registry and context.cancel.turn is state.cancel  # the call's, within its turn's
    assert context.budget is runtime.budget and context.depth == 0
    assert context.recorder is not None and context.catalog is not None and context.subtasks is not None
    assert context.questions is None  # nobody is on a socket to answer


def test_a_tool_sees_the_datasets_earlier_tools_of_the_conversation_made(run, make_tool):
    make_tool("report", handlers.with_side_channels)
    make_tool("reader", lambda inputs, context: f"datasets: {sorted(context.datasets)}")
    dispatch(run, block("report"))
    assert "datasets: ['sales']" in dispatch(run, block("reader"))[0].content


def test_a_sequential_system_tool_is_known_on_a_registry_that_has_not_loaded_yet(run, registry, monkeypatch):
    from tools import catalog

    entries = [dict(e, sequential=True) if e["name"] == "plan" else e for e in catalog.system_tools()]
    monkeypatch.setattr(catalog, "system_tools", lambda: entries)
    runtime, _ = run
    from conversations.dispatcher import _groups

    groups = _groups([block("search_tools", query="x"), block("plan"), block("search_tools", 1, query="y")], runtime)
    assert [[b["name"] for b in g] for g in groups] == [["search_tools"], ["plan"], ["search_tools"]]


def test_the_datasource_passwords_are_marked_write_only():
    from registry.snapshot import secret_inputs
    from tools.datasources import TOOLS

    marked = {tool.name: secret_inputs(tool.schema()) for tool in TOOLS}
    assert marked["register_datasource"] == marked["set_datasource_auth"] == {"password"}

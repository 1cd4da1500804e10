"""run_program: one program the model writes calls tools from the sandbox and gets their
data; each inner call passes the registry's one gate (policy, log, events), and a tool
that sandboxed code may not call is refused (issue 41)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from conversations import approvals as decisions
from conversations.dispatcher import dispatch_tool_calls
from conversations.models import ConversationEvent, PolicyRule
from conversations.state import DispatchState
from conversations.turns import begin_turn
from datacatalog.models import DataSource
from datacatalog.uploads import upload_dataset
from registry.models import ApprovalRule, PendingApproval, TenantMembership, ToolExecutionLog
from registry.sandbox import service
from tests.conftest import TENANT, text
from tests.data.conftest import SALES_CSV

pytestmark = pytest.mark.django_db(transaction=True)

TOTALS = "SELECT region, CAST(sum(units) AS BIGINT) AS units FROM sales GROUP BY region ORDER BY units DESC"


@pytest.fixture(scope="module", autouse=True)
def _zygote_stops():
    yield
    service.shutdown()


@pytest.fixture
def analyst(django_user_model):
    return django_user_model.objects.create_user("analyst", is_staff=True)


@pytest.fixture
def as_staff(analyst):
    return {"user_id": str(analyst.pk)}


@pytest.fixture
def turn(conversation, analyst):
    """A turn in progress in the acme conversation, with sales.csv uploaded."""
    conversation.user = analyst
    conversation.save(update_fields=["user"])
    runtime = begin_turn(conversation, user=analyst, user_message="go")
    upload_dataset(runtime.catalog, "sales.csv", SALES_CSV)
    state = DispatchState.for_conversation(conversation)
    yield runtime, state
    state.cancel.release()


def dispatch(turn, code):
    runtime, state = turn
    block = {"id": "toolu_program", "name": "run_program", "input": {"code": code}}
    outcome = async_to_sync(dispatch_tool_calls)([block], runtime, state)[0]
    runtime.flush_events()
    return outcome


def test_a_program_reads_a_tables_rows_as_data_and_returns_only_its_result(sales, in_conversation, as_staff):
    code = f"rows = call('query', sql={TOTALS!r})\nresult = rows[0]['region'] + ' sold ' + str(rows[0]['units'])"
    result = in_conversation("run_program", context=as_staff, code=code)
    assert result.error is None, result.content
    assert text(result) == "north sold 17"
    assert "south" not in result.content  # the other rows never reach the model


def test_a_hint_from_an_inner_call_ends_the_program_with_a_hint_naming_the_tool(sales, in_conversation, as_staff):
    code = "rows = call('query', sql='SELECT nothing FROM sales')\nresult = 'unreachable'"
    result = in_conversation("run_program", context=as_staff, code=code)
    assert result.error is None  # a Hint: the model can correct the program
    assert result.content.startswith("⚠ schema hint: the code failed: ToolFailed: query: ")
    assert "unreachable" not in result.content


def test_a_program_that_catches_a_failing_call_goes_on_without_it(sales, in_conversation, as_staff):
    code = (
        "try:\n    call('preview_data', dataset='no_such_table')\n    seen = 'previewed'\n"
        "except Exception as exc:\n    seen = 'skipped (' + str(exc)[:40] + ')'\n"
        f"rows = call('query', sql={TOTALS!r})\nresult = seen + ', then ' + rows[0]['region']"
    )
    result = in_conversation("run_program", context=as_staff, code=code)
    assert text(result).startswith("skipped (preview_data: ⚠ schema hint:") and text(result).endswith(", then north")


def test_a_chart_drawn_inside_a_program_is_still_shown_to_the_user(sales, in_conversation, as_staff):
    code = (
        f"call('query', sql={TOTALS!r}, save_as='by_region')\n"
        "call('create_chart', dataset='by_region', x='region', y='units')\nresult = 'charted'"
    )
    result = in_conversation("run_program", context=as_staff, code=code)
    assert text(result) == "charted"
    assert [card["type"] for card in result.cards] == ["chart", "file_download"]
    assert "by_region" in result.datasets


def test_an_inner_call_is_logged_and_recorded_in_the_conversations_events(turn):
    result = dispatch(turn, f"rows = call('query', sql={TOTALS!r})\nresult = len(rows)")
    assert text(result.result) == "3"  # north, south, east
    logged = ToolExecutionLog.objects.get(tool_name="query")
    assert (logged.conversation_id, logged.outcome) == (turn[0].conversation.pk, "ok")
    inner = ConversationEvent.objects.filter(event_type="contract_envelope", data__tool="query")
    assert [event.data.get("from_sandbox") for event in inner] == [True]


def test_an_inner_call_meets_the_policy_that_refuses_the_model(turn):
    PolicyRule.objects.create(
        name="no sql",
        tool_name="query",
        kind="requires_capability",
        parameter="group:finance",
        action="block",
        tenant_id=TENANT,
    )
    result = dispatch(turn, f"rows = call('query', sql={TOTALS!r})\nresult = 'ran'")
    assert "refused by policy: this needs the capability 'group:finance'" in result.result.content
    assert "ran" not in text(result.result).split("\n")[-1]
    assert not ToolExecutionLog.objects.filter(tool_name="query", outcome="ok").exists()
    assert ConversationEvent.objects.filter(event_type="policy_violation", data__tool="query").count() == 1


@pytest.fixture
def sql_needs_a_person():
    rule = ApprovalRule.objects.create(name="sql needs a person", tenant_id=TENANT, tool_name="query")
    yield rule
    rule.delete()  # the rules are cached per process; deleting the row forgets them


def test_an_inner_call_a_rule_holds_for_a_person_ends_the_program_and_runs_once_approved(turn, sql_needs_a_person):
    runtime, _ = turn
    TenantMembership.objects.create(user=runtime.user, tenant_id=TENANT)
    result = dispatch(turn, f"rows = call('query', sql={TOTALS!r}, save_as='by_region')\nresult = 'went on'")
    assert "query has not run: it waits for the person's approval" in result.result.content
    assert "went on" not in result.result.content
    row = PendingApproval.objects.get()
    assert [card["approval_id"] for card in runtime.awaiting] == [str(row.pk)]  # the turn pauses

    decisions.decide(str(row.pk), "approve", acting_user=runtime.user, expected_hash=row.args_hash)
    assert "by_region" in runtime.catalog.names()  # the approved call ran, as it was shown


def test_a_tool_that_opted_out_of_sandboxed_callers_is_refused(sales, in_conversation, as_staff):
    code = "call('register_datasource', name='app', kind='sqlite', path='var/eunice.sqlite3')\nresult = 'ran'"
    result = in_conversation("run_program", context=as_staff, code=code)
    assert "'register_datasource' can never be called from sandboxed code" in result.content
    assert not DataSource.objects.exists()


def test_custom_tools_call_tool_still_reads_text_while_call_reads_data(sales, in_conversation, as_staff):
    code = (
        f"as_text = call_tool('query', {{'sql': {TOTALS!r}}})\n"
        f"as_data = call('query', sql={TOTALS!r})\n"
        "result = str(isinstance(as_text, str)) + ' ' + str(isinstance(as_data, list)) + ' ' + str(as_data[0])"
    )
    result = in_conversation("run_program", context=as_staff, code=code)
    assert text(result) == "True True {'region': 'north', 'units': 17}"


def test_a_member_who_is_not_staff_cannot_run_a_program(sales, in_conversation):
    result = in_conversation("run_program", code="result = 1")
    assert result.content.startswith("✗ error (PermissionDenied): run_program runs code and is limited to staff")

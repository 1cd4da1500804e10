"""The staff pages of issue 29, item 9, through Django's test client: the playground's
conversation picker (the chat's rule: only one's own conversations) and fixed tenant,
the readable "why is this tool in context" table, and cost tables under the filters."""

import re
from datetime import timedelta

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from conversations.models import Conversation, ConversationEvent, UsageLog
from datacatalog.store import ConversationCatalog
from registry.context import ToolContext
from registry.models import TenantMembership, ToolExecutionLog
from registry.result import ToolResult
from registry.usage import charge
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


def person(name: str, tenant: str | None, **flags):
    user = get_user_model().objects.create_user(name, password="pw", **flags)
    if tenant:
        TenantMembership.objects.create(user=user, tenant_id=tenant)
    return user


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def boss():
    return person("boss", TENANT, is_staff=True)


def talk(user, tenant: str, title: str, minutes_ago: int = 0) -> Conversation:
    conversation = Conversation.objects.create(tenant_id=tenant, user=user, title=title)
    # updated_at is auto_now: only an update() sets it to the past.
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes_ago))
    return conversation


def options(page: str, select: str) -> list[str]:
    block = re.search(rf'<select name="{select}".*?</select>', page, re.S)
    assert block is not None, f"no select {select!r} on the page"
    return re.findall(r"<option [^>]*>([^<]*)</option>", block.group(0))


# --- The playground: a conversation picker ------------------------------------


def test_the_playground_offers_my_own_conversations_most_recent_first(boss):
    talk(boss, TENANT, "Older", minutes_ago=30)
    talk(boss, TENANT, "Newest", minutes_ago=1)
    Conversation.objects.create(tenant_id=TENANT, user=boss, title="Deleted", deleted_at=timezone.now())
    talk(person("colleague", TENANT), TENANT, "Colleague's")
    talk(person("eve", OTHER_TENANT), OTHER_TENANT, "Other tenant's")
    page = signed_in(boss).get("/playground/preview_data/").content.decode()
    titles = [label.split(" · ")[0] for label in options(page, "conversation")]
    assert titles == ["none (tools that need no conversation)", "Newest", "Older"]


def test_the_playground_offers_at_most_fifty_conversations(boss):
    Conversation.objects.bulk_create([Conversation(tenant_id=TENANT, user=boss, title=f"c{n}") for n in range(55)])
    page = signed_in(boss).get("/playground/preview_data/").content.decode()
    assert len(options(page, "conversation")) == 1 + 50


# The tool runs on a worker thread, with a connection of its own: it sees committed rows only.
@pytest.mark.django_db(transaction=True)
def test_a_data_tool_runs_on_the_picked_conversations_datasets(boss):
    mine = talk(boss, TENANT, "Cities")
    ConversationCatalog(TENANT, mine.pk).save("cities", pd.DataFrame({"city": ["Oslo", "Bergen"]}), source="upload")
    response = signed_in(boss).post(
        "/playground/preview_data/", {"inputs": '{"dataset": "cities"}', "conversation": mine.pk}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Bergen" in page and "NoConversation" not in page
    assert ToolExecutionLog.objects.get(tool_name="preview_data").conversation_id == mine.pk
    # The picked conversation stays selected for the next run.
    assert f'<option value="{mine.pk}" selected>' in page


@pytest.mark.parametrize("whose", ["colleague", "other tenant"])
def test_the_playground_refuses_a_conversation_not_my_own(boss, whose):
    owner = person("colleague", TENANT) if whose == "colleague" else person("eve", OTHER_TENANT)
    theirs = talk(owner, owner.tenant_membership.tenant_id, "Theirs")
    ConversationCatalog(theirs.tenant_id, theirs.pk).save("secret", pd.DataFrame({"x": ["hidden"]}), source="upload")
    response = signed_in(boss).post(
        "/playground/preview_data/", {"inputs": '{"dataset": "secret"}', "conversation": theirs.pk}
    )
    assert response.status_code == 403
    assert "pick one of your own conversations" in response.content.decode()
    assert not ToolExecutionLog.objects.filter(tool_name="preview_data").exists()


def test_a_superuser_cannot_run_their_conversation_under_another_tenant():
    root = person("root", TENANT, is_staff=True, is_superuser=True)
    mine = talk(root, TENANT, "Mine")
    response = signed_in(root).post(
        "/playground/search_tools/", {"inputs": '{"query": "x"}', "conversation": mine.pk, "tenant": OTHER_TENANT}
    )
    assert response.status_code == 400
    assert f"the conversation belongs to tenant {TENANT}" in response.content.decode()


# --- The playground: the tenant -------------------------------------------------


def test_staff_see_their_tenant_as_a_fixed_value_not_a_text_box(boss):
    page = signed_in(boss).get("/playground/search_tools/").content.decode()
    assert 'name="tenant"' not in page
    assert f'<strong id="tenant">{TENANT}</strong>' in page


def test_a_superuser_picks_the_tenant_from_those_users_act_for():
    root = person("root", None, is_staff=True, is_superuser=True)
    person("ann", TENANT)
    person("eve", OTHER_TENANT)
    page = signed_in(root).get("/playground/search_tools/").content.decode()
    assert '<input name="tenant"' not in page
    assert set(options(page, "tenant")) >= {TENANT, OTHER_TENANT}


def test_staff_posting_another_tenant_are_still_refused(boss):
    response = signed_in(boss).post("/playground/search_tools/", {"inputs": "{}", "tenant": OTHER_TENANT})
    assert response.status_code == 403


# --- The events page: why each tool was in context --------------------------


def test_the_events_page_shows_each_calls_tool_reasons_as_an_escaped_table(boss):
    conversation = talk(boss, TENANT, "Surface")
    tools = [
        {"name": "search_tools", "reason": "anchor"},
        {"name": "preview_data", "reason": "<b>usage</b>", "score": 0.5},
    ]
    ConversationEvent.objects.create(
        conversation=conversation,
        turn=1,
        sequence=1,
        event_type="llm_request",
        data={"model": "m-1", "tools": tools, "tools_cut": ["old_tool"]},
    )
    page = signed_in(boss).get(f"/telemetry/conversations/{conversation.pk}/").content.decode()
    assert '<table class="surface">' in page
    assert '<th scope="col">tool</th><th scope="col">reason</th><th scope="col">score</th>' in page
    assert "<td>search_tools</td><td>anchor</td><td></td>" in page
    assert "<td>preview_data</td><td>&lt;b&gt;usage&lt;/b&gt;</td><td>0.5</td>" in page
    assert "<b>usage</b>" not in page
    assert "Cut to hold the cap: old_tool" in page


# --- Telemetry: cost under the filters, and by tool -------------------------


def cost_rows(page: str, table: str) -> dict[str, str]:
    block = re.search(rf'<table id="{table}">.*?</table>', page, re.S)
    assert block is not None, f"no table {table!r}"
    return dict(re.findall(r"<tr><td>([^<]*)</td><td>\d+</td><td>\$([\d.]+)</td></tr>", block.group(0)))


@pytest.fixture
def usage(boss):
    colleague = person("colleague", TENANT)
    UsageLog.objects.create(tenant_id=TENANT, user_id=str(boss.pk), kind="llm", name="model-a", cost_usd=1.0)
    UsageLog.objects.create(
        tenant_id=TENANT, user_id=str(boss.pk), kind="tool", name="delegate", cost_usd=0.25, success=True
    )
    UsageLog.objects.create(
        tenant_id=TENANT, user_id=str(colleague.pk), kind="tool", name="delegate", cost_usd=0.5, success=False
    )
    UsageLog.objects.create(
        tenant_id=TENANT, user_id=str(colleague.pk), kind="tool", name="web_search", cost_usd=2, success=True
    )
    old = UsageLog.objects.create(tenant_id=TENANT, user_id=str(boss.pk), kind="tool", name="old_tool", cost_usd=9)
    UsageLog.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))
    UsageLog.objects.create(tenant_id=OTHER_TENANT, kind="tool", name="theirs", cost_usd=7)
    return colleague


def test_cost_by_tool_groups_the_tools_usage_rows_by_tool_not_by_model(boss, usage):
    page = signed_in(boss).get("/telemetry/").content.decode()
    assert cost_rows(page, "cost-by-tool") == {"web_search": "2.0000", "delegate": "0.7500"}
    assert cost_rows(page, "cost-by-model") == {"model-a": "1.0000"}
    assert cost_rows(page, "cost-by-tenant") == {TENANT: "3.7500"}


def test_the_cost_tables_honour_the_user_tool_and_days_filters(boss, usage):
    client = signed_in(boss)
    mine = client.get("/telemetry/", {"user": str(boss.pk)}).content.decode()
    assert cost_rows(mine, "cost-by-tool") == {"delegate": "0.2500"}
    assert cost_rows(mine, "cost-by-tenant") == {TENANT: "1.2500"}
    one_tool = client.get("/telemetry/", {"tool": "web_search"}).content.decode()
    assert cost_rows(one_tool, "cost-by-tool") == {"web_search": "2.0000"}
    assert cost_rows(one_tool, "cost-by-model") == {}
    assert cost_rows(one_tool, "cost-by-tenant") == {TENANT: "2.0000"}
    month = client.get("/telemetry/", {"days": "60", "user": str(boss.pk)}).content.decode()
    assert cost_rows(month, "cost-by-tool") == {"old_tool": "9.0000", "delegate": "0.2500"}


def test_the_cost_tables_honour_the_success_filter(boss, usage):
    client = signed_in(boss)
    failed = client.get("/telemetry/", {"success": "no"}).content.decode()
    assert cost_rows(failed, "cost-by-tool") == {"delegate": "0.5000"}
    assert cost_rows(failed, "cost-by-model") == {}  # a model request has no success of its own
    assert cost_rows(failed, "cost-by-tenant") == {TENANT: "0.5000"}
    succeeded = client.get("/telemetry/", {"success": "yes"}).content.decode()
    assert cost_rows(succeeded, "cost-by-tool") == {"web_search": "2.0000", "delegate": "0.2500"}


@pytest.mark.parametrize(("error", "success"), [(None, True), ("it broke", False)])
def test_a_tools_usage_row_records_whether_the_call_succeeded(boss, error, success):
    context = ToolContext(tenant_id=TENANT, user_id=str(boss.pk), conversation_id=talk(boss, TENANT, "Spend").pk)
    charge(context, "web_search", ToolResult(content="x", cost=0.5, error=error))
    assert UsageLog.objects.get(kind="tool", name="web_search").success is success


def test_the_cost_tables_honour_the_tenant_filter_within_the_superusers_view(usage):
    root = person("root", None, is_staff=True, is_superuser=True)
    page = signed_in(root).get("/telemetry/", {"tenant": OTHER_TENANT}).content.decode()
    assert cost_rows(page, "cost-by-tool") == {"theirs": "7.0000"}
    assert cost_rows(page, "cost-by-tenant") == {OTHER_TENANT: "7.0000"}

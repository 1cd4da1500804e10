"""The staff pages in real Chromium (issue 29, item 9): the playground runs a data tool on
a conversation picked from the staff member's own, with their tenant fixed; the events
page shows why each tool was in a call's context as a table; the cost tables follow the
filters and list tools by tool.

One daphne server for the module.
"""

from datetime import timedelta

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from conversations.models import Conversation, ConversationEvent, UsageLog
from datacatalog.store import ConversationCatalog
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The first test also waits for the module's server to start (up to 120 s on a loaded machine).
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def server(django_db_setup):
    with serving({}) as url:
        yield url


@pytest.fixture
def boss():
    """Staff of the test tenant. Made before the browser starts (Playwright's sync API runs
    an event loop on this thread)."""
    user = get_user_model().objects.create_user("boss", password="a-good-password", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return user


@pytest.fixture
def cities(boss):
    """Two of boss's conversations (one with a dataset) and a colleague's, not offered."""
    Conversation.objects.create(tenant_id=TENANT, user=boss, title="Empty talk")
    conversation = Conversation.objects.create(tenant_id=TENANT, user=boss, title="Cities")
    ConversationCatalog(TENANT, conversation.pk).save(
        "cities", pd.DataFrame({"city": ["Oslo", "Bergen"], "rain": [12, 25]}), source="upload"
    )
    colleague = get_user_model().objects.create_user("colleague", password="a-good-password")
    TenantMembership.objects.create(user=colleague, tenant_id=TENANT)
    Conversation.objects.create(tenant_id=TENANT, user=colleague, title="Colleague's")
    return conversation


def test_staff_pick_their_conversation_and_a_data_tool_reads_its_dataset(cities, server, browser_page):
    page = browser_page
    sign_in(page, server, "boss")
    page.goto(f"{server}/playground/preview_data/")
    # The tenant is fixed: no box to type another into.
    assert page.text_content("#tenant") == TENANT
    assert page.query_selector("[name=tenant]") is None
    labels = [o.text_content().split(" · ")[0] for o in page.query_selector_all("#conversation option")]
    assert labels == ["none (tools that need no conversation)", "Cities", "Empty talk"]
    page.select_option("#conversation", cities.pk)
    page.fill("input[data-field=dataset]", "cities")
    page.dispatch_event("input[data-field=dataset]", "change")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("#rendered")
    rendered = page.text_content("#rendered")
    assert "Bergen" in rendered and "NoConversation" not in rendered
    # The picked conversation stays picked for the next run.
    assert page.input_value("#conversation") == cities.pk


HOSTILE = '<img src="x" onerror="window.hacked = 1">'


@pytest.fixture
def surface_event(boss):
    conversation = Conversation.objects.create(tenant_id=TENANT, user=boss, title="Surface")
    ConversationEvent.objects.create(
        conversation=conversation,
        turn=1,
        sequence=1,
        event_type="llm_request",
        data={
            "model": "model-a",
            "tools": [
                {"name": "search_tools", "reason": "anchor"},
                {"name": "preview_data", "reason": HOSTILE, "rank": 2},
            ],
            "tools_cut": ["old_tool"],
        },
    )
    return conversation


def test_the_events_page_shows_why_each_tool_was_in_context_as_a_table(surface_event, server, browser_page):
    page = browser_page
    sign_in(page, server, "boss")
    page.goto(f"{server}/telemetry/conversations/{surface_event.pk}/")
    table = page.wait_for_selector("table.surface")
    assert table.is_visible()  # not folded away in the raw JSON
    headers = [th.text_content() for th in table.query_selector_all("th")]
    assert headers == ["tool", "reason", "rank"]
    rows = [[td.text_content() for td in tr.query_selector_all("td")] for tr in table.query_selector_all("tr")[1:]]
    assert rows == [["search_tools", "anchor", ""], ["preview_data", HOSTILE, "2"]]
    assert page.query_selector("table.surface img") is None
    assert page.evaluate("window.hacked") is None
    assert "old_tool" in page.text_content(".surface-cut")


@pytest.fixture
def usage(boss):
    colleague = get_user_model().objects.create_user("colleague", password="a-good-password")
    rows = [
        UsageLog(tenant_id=TENANT, user_id=str(boss.pk), kind="llm", name="model-a", cost_usd=1.0),
        UsageLog(tenant_id=TENANT, user_id=str(boss.pk), kind="tool", name="delegate", cost_usd=0.25, success=True),
        UsageLog(
            tenant_id=TENANT, user_id=str(colleague.pk), kind="tool", name="web_search", cost_usd=2, success=False
        ),
        UsageLog(tenant_id=OTHER_TENANT, kind="tool", name="theirs", cost_usd=7.0),
    ]
    UsageLog.objects.bulk_create(rows)
    old = UsageLog.objects.create(tenant_id=TENANT, user_id=str(boss.pk), kind="tool", name="old_tool", cost_usd=9)
    UsageLog.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=30))
    return boss


def cost_table(page, table: str) -> list[list[str]]:
    cells = page.query_selector_all(f"#{table} tr")[1:]
    return [[td.text_content() for td in tr.query_selector_all("td")] for tr in cells]


def test_the_cost_tables_list_tools_and_follow_the_filters(usage, server, browser_page):
    page = browser_page
    sign_in(page, server, "boss")
    page.goto(f"{server}/telemetry/")
    assert cost_table(page, "cost-by-tool") == [["web_search", "1", "$2.0000"], ["delegate", "1", "$0.2500"]]
    assert cost_table(page, "cost-by-model") == [["model-a", "1", "$1.0000"]]
    page.select_option("select[name=success]", "no")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/telemetry/?*success=no*")
    assert cost_table(page, "cost-by-tool") == [["web_search", "1", "$2.0000"]]
    page.select_option("select[name=success]", "")
    page.fill("input[name=user]", str(usage.pk))
    page.fill("input[name=days]", "60")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/telemetry/?*user=*")
    assert cost_table(page, "cost-by-tool") == [["old_tool", "1", "$9.0000"], ["delegate", "1", "$0.2500"]]
    assert cost_table(page, "cost-by-tenant") == [[TENANT, "3", "$10.2500"]]
    page.fill("input[name=tool]", "delegate")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/telemetry/?*tool=delegate*")
    assert cost_table(page, "cost-by-tool") == [["delegate", "1", "$0.2500"]]
    assert cost_table(page, "cost-by-model") == [["No model cost recorded."]]

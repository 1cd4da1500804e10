"""The staff pages in real Chromium (issue 29, item 9): the playground runs a data tool on
a conversation picked from the staff member's own, with their tenant fixed; the events
page shows why each tool was in a call's context as a table.

One daphne server for the module.
"""

import pandas as pd
import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation, ConversationEvent
from datacatalog.store import ConversationCatalog
from registry.models import TenantMembership
from tests.conftest import TENANT
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

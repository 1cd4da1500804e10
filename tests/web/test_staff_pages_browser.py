"""The staff pages in real Chromium (issue 29, item 9): the playground runs a data tool on
a conversation picked from the staff member's own, with their tenant fixed.

One daphne server for the module.
"""

import pandas as pd
import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
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

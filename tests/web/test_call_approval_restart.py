"""A restart with an approval pending: the turn paused on one server process; after that
process stopped, another one (started later, on the same database) shows the card again,
takes the click and resumes the turn with exactly the approved call."""

import pytest

from llm.scripted import ScriptedMessagesServer
from registry.models import ApprovalRule, ToolExecutionLog
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in
from tests.web.test_call_approvals import ANSWER, ASK, db, last_request_text, the_row

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(500),  # two server start-ups on a loaded machine
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def rule(db):
    """Made before the browser starts: Playwright's sync API runs an event loop on this thread."""
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    ApprovalRule.objects.create(name="searches need a person", tenant_id=TENANT, tool_name="search_tools")


def test_an_approval_pending_over_a_restart_resumes_the_turn(rule, conversation, browser_page):
    page = browser_page
    with ScriptedMessagesServer([ASK, ANSWER]) as scripted:
        env = {"EUNICE_TEST_SCRIPTED_MODEL_URL": scripted.url, "EUNICE_LLM_MAX_RETRIES": "0"}
        with serving(env) as first:
            sign_in(page, first)
            open_conversation(page, first, conversation)
            say(page, "Which tool plans?")
            page.wait_for_selector(".approval", timeout=60_000)
            page.wait_for_selector(".message.notice >> text=Waiting for your decision")
            page.goto("about:blank")  # the page's own requests would fail once the server stops
        # The first process is gone; nothing of the approval lived in it.
        assert db(the_row)[:4] == ("pending", {"query": "make a plan", "limit": 5}, None, False)
        with serving(env) as second:
            page.context.clear_cookies()  # a new visit: signed in afresh
            sign_in(page, second)
            open_conversation(page, second, conversation)
            card = page.wait_for_selector(".approval")  # drawn again from the row
            assert '"query": "make a plan"' in card.text_content()
            card.query_selector("button.approve").click()
            page.wait_for_selector(".message.assistant >> text=Thanks for deciding.", timeout=60_000)
            page.goto("about:blank")
        status, arguments, _, ran, outcome = db(the_row)
        assert (status, arguments, ran) == ("approved", {"query": "make a plan", "limit": 5}, True)
        assert "[Approval] I approved search_tools" in last_request_text(scripted)
        assert len(scripted.requests) == 2  # the paused turn's call, and the resumed turn's
    ran_calls = db(
        lambda: list(
            ToolExecutionLog.objects.filter(tool_name="search_tools")
            .order_by("id")
            .values_list("outcome_kind", "input_data")
        )
    )
    assert [kind for kind, _ in ran_calls] == ["ApprovalPending", ""]
    assert ran_calls[1][1] == {"query": "make a plan", "limit": 5}

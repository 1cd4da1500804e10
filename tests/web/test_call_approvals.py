"""A call an approval rule covers, on the chat page in real Chromium: the turn pauses on a
card showing the call; Approve, Edit and Reject decide it and the turn goes on.

One daphne server for the module, with a scripted model that asks for the same
search_tools call and then answers, twice per test, so the tests need no order.
"""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from llm.scripted import ScriptedMessagesServer
from registry.models import ApprovalRule, PendingApproval
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The first test also waits for the module's server to start (up to 120 s on a loaded machine).
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

ASKED = {"query": "make a plan", "reasoning": "find the planning tool"}
ASK = {"tool_uses": [{"name": "search_tools", "input": ASKED, "id": "toolu_ask"}]}
ANSWER = {"text": ["Thanks ", "for deciding."]}


@pytest.fixture(scope="module")
def scripted():
    model = ScriptedMessagesServer([ASK, ANSWER] * 3).start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def server(django_db_setup, scripted):
    with serving({"EUNICE_TEST_SCRIPTED_MODEL_URL": scripted.url, "EUNICE_LLM_MAX_RETRIES": "0"}) as url:
        yield url


@pytest.fixture(autouse=True)
def chat_model_and_rule(db):
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    ApprovalRule.objects.create(name="searches need a person", tenant_id=TENANT, tool_name="search_tools")
    time.sleep(2.2)  # the server process reads the rules at most every 2 s


def db(query):
    """Run a query off this thread: Playwright's sync API keeps an event loop running on it."""

    def run():
        from django.db import close_old_connections

        try:
            return query()
        finally:
            close_old_connections()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=30)


def the_row() -> tuple:
    row = PendingApproval.objects.get()
    return row.status, row.arguments, row.original_arguments, row.executed_at is not None, row.outcome


def paused_on_the_card(page, server, conversation):
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Which tool plans?")
    card = page.wait_for_selector(".approval", timeout=60_000)
    page.wait_for_selector(".message.notice >> text=Waiting for your decision")
    shown = card.text_content()
    assert "search_tools" in shown and '"query": "make a plan"' in shown and "searches need a person" in shown
    assert "reasoning" not in page.text_content(".approval-arguments")  # what runs, not the model's narration
    assert db(the_row)[:4] == ("pending", {"query": "make a plan", "limit": 5}, None, False)
    return card


def last_request_text(scripted) -> str:
    content = scripted.requests[-1].messages[-1]["content"]
    return " ".join(block.get("text", "") for block in content if isinstance(block, dict))


def test_approve_runs_the_shown_call_and_the_turn_goes_on(server, scripted, conversation, browser_page):
    page = browser_page
    card = paused_on_the_card(page, server, conversation)
    card.query_selector("button.approve").click()
    page.wait_for_selector(".approval.approval-approved .approval-outcome", timeout=60_000)
    page.wait_for_selector(".message.assistant >> text=Thanks for deciding.", timeout=60_000)
    status, arguments, original, ran, outcome = db(the_row)
    assert (status, arguments, original, ran) == ("approved", {"query": "make a plan", "limit": 5}, None, True)
    assert "plan" in outcome
    assert "[Approval] I approved search_tools" in last_request_text(scripted)


def test_edit_runs_exactly_what_the_person_wrote(server, scripted, conversation, browser_page):
    page = browser_page
    card = paused_on_the_card(page, server, conversation)
    card.query_selector("button.edit").click()
    page.fill(".approval-editor", '{"query": "draw a chart", "limit": 2}')
    page.click(".approval button.approve")  # now "Approve edited"
    page.wait_for_selector(".approval.approval-approved", timeout=60_000)
    page.wait_for_selector(".message.assistant >> text=Thanks for deciding.", timeout=60_000)
    status, arguments, original, ran, outcome = db(the_row)
    assert (status, arguments, original, ran) == (
        "approved",
        {"query": "draw a chart", "limit": 2},
        {"query": "make a plan", "limit": 5},
        True,
    )
    told = last_request_text(scripted)
    assert "I edited your call" in told and '"draw a chart"' in told


def test_reject_runs_nothing_and_the_model_reads_the_reason(server, scripted, conversation, browser_page):
    page = browser_page
    card = paused_on_the_card(page, server, conversation)
    page.fill(".approval-reason", "search the docs instead")
    card.query_selector("button.reject").click()
    page.wait_for_selector(".approval.approval-rejected", timeout=60_000)
    page.wait_for_selector(".message.assistant >> text=Thanks for deciding.", timeout=60_000)
    assert db(the_row)[:4] == ("rejected", {"query": "make a plan", "limit": 5}, None, False)
    assert "nothing was run. My reason: search the docs instead" in last_request_text(scripted)

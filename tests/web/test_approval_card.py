"""The approval card in real Chromium: the person sees what an install runs and clicks."""

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from registry.models import MCPServer, PendingApproval
from tests.web.conftest import CHROMIUM, relayed_sockets
from tests.web.test_browser import open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


def db(query):
    """Run a query off this thread: Playwright's sync API keeps an event loop running on it."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(query).result(timeout=30)


def install_rows() -> tuple[list, list]:
    from django.db import close_old_connections

    try:
        return (
            list(MCPServer.objects.values_list("name", "command", "args")),
            list(PendingApproval.objects.values_list("status", "decided_by__username")),
        )
    finally:
        close_old_connections()


@pytest.fixture
def staff_conversation(conversation):
    conversation.user.is_staff = True
    conversation.user.save(update_fields=["is_staff"])
    return conversation


def test_an_install_waits_for_the_click_survives_a_reload_and_runs_what_the_card_showed(
    staff_conversation, server, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, staff_conversation)
    say(page, '/install_mcp_server {"id": "time", "name": "time"}')
    card = page.wait_for_selector(".approval")
    shown = card.text_content()
    assert f"{sys.executable} -m mcp_server_time" in shown and "mcp-server-time" in shown
    assert "(installed here)" in shown
    assert db(install_rows) == ([], [("pending", None)])

    page.reload()  # the card is the row's: it is drawn again
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    card = page.wait_for_selector(".approval")
    card.query_selector("button.approve").click()
    page.wait_for_selector(".approval.approval-approved .approval-outcome", timeout=60_000)
    assert "Installed time" in page.text_content(".approval-outcome")
    assert page.is_disabled(".approval button.approve") and page.is_disabled(".approval button.reject")
    assert db(install_rows) == ([("time", sys.executable, ["-m", "mcp_server_time"])], [("approved", "ann")])
    page.wait_for_selector(".message.user >> text=[Approval] I approved install_mcp_server")


def test_reject_runs_nothing(staff_conversation, server, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, staff_conversation)
    say(page, '/install_mcp_server {"id": "time", "name": "time"}')
    page.wait_for_selector(".approval button.reject").click()
    page.wait_for_selector(".approval.approval-rejected")
    assert db(install_rows) == ([], [("rejected", "ann")])


def test_a_card_waiting_for_its_click_survives_a_dropped_connection(staff_conversation, server, browser_page):
    page = browser_page
    sockets = relayed_sockets(page)
    sign_in(page, server)
    open_conversation(page, server, staff_conversation)
    say(page, '/install_mcp_server {"id": "time", "name": "time"}')
    page.wait_for_selector(".approval")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    sockets[0].close()  # the network drops the socket; the page reconnects and draws what is stored
    page.wait_for_function("() => document.querySelector('#send').disabled === true")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    assert len(sockets) == 2
    page.wait_for_selector(".approval button.approve", timeout=5_000).click()
    page.wait_for_selector(".approval.approval-approved .approval-outcome", timeout=60_000)
    assert db(install_rows)[1] == [("approved", "ann")]

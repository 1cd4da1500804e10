"""In real Chromium, one MCP server's features in the chat page: its prompt offered as a
slash command (typed arguments, the messages put into the composer), one of its resources
attached to the message, a tool asking the person for their name and age mid-call (the
server's form filled in and accepted; the tool's answer, built from what they typed, is what
the model reads), and a tool asking for a model call the person approves."""

import pytest

from conversations.models import WorkingSetEntry
from llm.scripted import ScriptedMessagesServer
from registry.mcp.config import ServerConfig
from tests.mcp.conftest import add_server, manager, mcp  # noqa: F401 - manager: a fresh one per test
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in
from tests.web.test_chat_accessibility import axe_violations

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),  # the server's start, on a loaded machine
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def greet(manager, conversation):  # noqa: F811
    """The demo server's tools registered (the served process connects on the first call)."""
    manager.connect(ServerConfig.from_model(add_server()))
    WorkingSetEntry.objects.create(conversation=conversation, tool_name=mcp("greet"))
    WorkingSetEntry.objects.create(conversation=conversation, tool_name=mcp("summarize"))
    manager.stop()  # the served process holds its own session
    return mcp("greet")


@pytest.fixture
def scripted(greet):
    model = ScriptedMessagesServer(
        [
            {"tool_uses": [{"name": greet, "input": {}, "id": "t1"}]},
            {"text": ["Greeted."], "expect": {"tool_result_contains": "Hello Alice, 41"}},
            {"tool_uses": [{"name": mcp("summarize"), "input": {"text": "the tides"}, "id": "t2"}]},
            {"text": ["Tides rise twice a day."]},  # the server's model call, once approved
            {"text": ["Summarized."], "expect": {"tool_result_contains": "summary by claude-test: Tides rise"}},
        ]
    ).start()
    yield model
    model.stop()
    assert model.failures == [], model.failures


@pytest.fixture
def server(scripted, db):
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    with serving({"EUNICE_TEST_SCRIPTED_MODEL_URL": scripted.url, "EUNICE_LLM_MAX_RETRIES": "0"}) as url:
        yield url


def test_a_prompt_and_a_resource_fill_the_composer_and_the_person_answers_the_form(server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    # The prompts' list is asked for as the person types: a list that arrives after they
    # chose a prompt (a slow answer to an earlier keystroke) must not take its form away.
    asked = []  # every request for the list; all but the first are held until the choice

    def hold_all_but_the_first(route):
        asked.append(route)
        if len(asked) == 1:
            route.continue_()

    page.route("**/api/mcp/prompts/", hold_all_but_the_first)
    page.fill("#prompt", "/dem")
    page.dispatch_event("#prompt", "input")  # a second keystroke while the list loads
    page.click(".prompt-commands >> text=/demo:review")
    page.wait_for_selector("form.prompt-arguments")
    for route in asked[1:]:
        with page.expect_response("**/api/mcp/prompts/"):
            route.continue_()
        page.wait_for_timeout(300)  # the page's own handling of that answer
    assert page.locator("form.prompt-arguments").count() == 1
    page.locator("form.prompt-arguments").get_by_label("code (required)").fill("x = 1")
    page.click("form.prompt-arguments button[type=submit]")
    page.wait_for_function("() => document.querySelector('#prompt').value.includes('x = 1')")
    assert page.input_value("#prompt") == "Please review this code for clarity:\nx = 1"

    page.fill("#prompt", "")
    page.click("#attach-resource")
    page.click(".resource-list >> text=Read me")
    page.wait_for_function("() => document.querySelector('#prompt').value.includes('[end of demo://readme]')")
    assert "The demo server answers the tests." in page.input_value("#prompt")

    say(page, "Greet me.")
    form = page.wait_for_selector("form.elicitation", timeout=90_000)
    assert "The MCP server “demo” asks you:" in form.text_content() and "Who are you?" in form.text_content()
    assert axe_violations(page, server) == []  # the server's form is as accessible as the page
    fields = page.locator("form.elicitation")
    fields.get_by_label("Name").fill("Alice")  # the schema's titles label the fields
    fields.get_by_label("Age").fill("41")
    page.click("form.elicitation button[type=submit]")
    page.wait_for_selector("text=You accepted the request of demo.")
    page.wait_for_selector(".message.assistant >> text=Greeted.", timeout=60_000)

    say(page, "Summarize the tides.")
    approval = page.wait_for_selector("form.elicitation >> text=Summarize: the tides", timeout=60_000)
    assert approval is not None and "One line." in page.text_content("form.elicitation")
    page.click("form.elicitation button[type=submit]")  # Approve
    page.wait_for_selector(".message.assistant >> text=Summarized.", timeout=60_000)

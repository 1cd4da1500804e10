"""Answers on the chat page as Markdown, in real Chromium: rendered by the vendored
marked and DOMPurify, code highlighted and copyable; blocks already streamed keep their
nodes; hostile Markdown runs nothing; a refused message keeps its text.

One daphne server for the module, with a scripted model whose every turn is the same
streamed Markdown answer, so the tests need no particular order.
"""

import pytest

from conversations.models import ChatMessage
from llm.scripted import ScriptedMessagesServer
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The first test also waits for the module's server to start (up to 120 s on a loaded machine).
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

CODE = "def wet(mm):\n    return mm > 10"
ANSWER = [
    "## Rain",
    " report\n\n",
    "Oslo is **wet**",
    ".\n\n",
    "| city | mm |\n",
    "|---|---|\n",
    "| Oslo | 12 |\n",
    "| Bergen | 25 |\n\n",
    "```python\n",
    "def wet(mm):\n",
    "    return mm > 10\n",
    "```\n\n",
    *[f"word{n} " for n in range(40)],
]
TURN = {"text": ANSWER, "delay": 0.08}  # about 4 s: long enough to act while it streams


@pytest.fixture(scope="module")
def scripted():
    model = ScriptedMessagesServer([TURN] * 4).start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def server(django_db_setup, scripted):
    with serving({"EUNICE_TEST_SCRIPTED_MODEL_URL": scripted.url, "EUNICE_LLM_MAX_RETRIES": "0"}) as url:
        yield url


@pytest.fixture(autouse=True)
def chat_model(db):
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})


def finished(page) -> None:
    page.wait_for_function("() => document.querySelector('#send').disabled === false")


def test_an_answer_streams_in_as_markdown_and_finished_blocks_keep_their_nodes(server, conversation, browser_page):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "How wet is it?")
    page.wait_for_selector(".message.assistant .text p strong")  # the heading's block is finished
    page.evaluate("window.heading = document.querySelector('.message.assistant h2')")
    page.wait_for_selector(".message.assistant .code-block")  # and so is the table's
    page.evaluate("window.table = document.querySelector('.message.assistant table')")
    finished(page)

    same = "(node) => node.isConnected && node === document.querySelector('.message.assistant ' + node.localName)"
    assert page.evaluate(f"({same})(window.heading)") and page.evaluate(f"({same})(window.table)")
    assert page.text_content(".message.assistant h2") == "Rain report"
    assert page.locator(".message.assistant .table-scroll table td").all_text_contents()[:2] == ["Oslo", "12"]
    assert page.locator(".message.assistant pre code.hljs .hljs-keyword").count() >= 1  # highlighted
    page.click(".message.assistant .code-block button.copy")
    page.wait_for_function("() => document.querySelector('.code-block button.copy').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    page.click(".message.assistant .answer-actions button.copy")
    page.wait_for_function("() => document.querySelector('.answer-actions button.copy').textContent === 'Copied'")
    assert page.evaluate("navigator.clipboard.readText()") == "".join(ANSWER)

    page.reload()  # the stored answer is drawn the same way
    page.wait_for_selector(".message.assistant pre code.hljs")
    assert page.text_content(".message.assistant h2") == "Rain report"


HOSTILE = """**Bold** claims, and:

<script>window.pwned = 1</script>
<img src=x onerror="window.pwned = 2">
[click me](javascript:window.pwned=3)
<a href="javascript:window.pwned=4">also me</a>
<iframe src="javascript:window.pwned=5"></iframe>
<svg><animate onbegin="window.pwned=6" attributeName="x" dur="1s"></animate></svg>
<details open ontoggle="window.pwned=7"><summary>more</summary>x</details>
<form action="/logout/" method="post"><button>Sign out</button></form>

![pixel](https://tracker.invalid/leak.png?what=secret)
"""


@pytest.fixture
def hostile_answer(conversation):
    """Stored before the browser starts: Playwright's sync API runs an event loop on this thread."""
    for role, text in (("user", "<b>not bold</b>"), ("assistant", HOSTILE)):
        ChatMessage.objects.create(conversation=conversation, message_id=role, tenant_id=TENANT, role=role, text=text)


def test_hostile_markdown_in_an_answer_is_drawn_without_running_anything(
    server, conversation, hostile_answer, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)

    answer = ".message.assistant .text"
    assert page.text_content(f"{answer} strong") == "Bold"  # Markdown, rendered
    assert page.text_content(".message.user .text") == "<b>not bold</b>"  # what the person typed, as typed
    for hostile in ("script", "iframe", "form", "button", "svg animate", "[onerror]", "[ontoggle]"):
        assert page.locator(f"{answer} {hostile}").count() == 0, hostile
    hrefs = page.eval_on_selector_all(f"{answer} a", "links => links.map(a => a.getAttribute('href') || '')")
    assert not [h for h in hrefs if h.strip().lower().startswith("javascript:")]
    assert "<script>window.pwned = 1</script>" in page.text_content(answer)  # HTML shown as written
    assert "[image: pixel]" in page.text_content(answer)  # a remote image is never fetched
    assert page.evaluate("window.pwned") is None


@pytest.fixture
def second_tab(server, browser_page):
    """Another window of the same browser, signed in as the same person."""
    tab = browser_page.context.browser.new_page()
    sign_in(tab, server)
    yield tab
    tab.close()


def test_a_message_refused_while_an_answer_runs_keeps_its_text_and_the_composer_works(
    server, conversation, browser_page, second_tab
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    open_conversation(second_tab, server, conversation)
    say(page, "How wet is it?")
    page.wait_for_selector(".message.assistant")
    say(second_tab, "And tomorrow?")  # a turn of this conversation is running: 409 turn_in_progress

    second_tab.wait_for_selector(".message.error")
    assert "running" in second_tab.text_content(".message.error")
    assert second_tab.input_value("#prompt") == "And tomorrow?"
    assert second_tab.is_enabled("#send") and second_tab.is_disabled("#cancel")
    assert second_tab.locator(".message.user").count() == 0  # not sent, so not shown as sent
    page.click("#cancel")
    finished(page)


def test_a_message_over_the_length_limit_is_refused_and_keeps_its_text(server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    long = "rain " * 6_500  # 32,500 characters: over the 32,000 the server takes
    page.fill("#prompt", long)
    page.press("#prompt", "Enter")
    page.wait_for_selector(".message.error")
    assert "the limit is 32,000" in page.text_content(".message.error")
    assert page.input_value("#prompt") == long.strip()
    assert page.is_enabled("#send") and page.is_disabled("#cancel")

"""The chat page's layout and its list of conversations, in real Chromium: long content
never widens the page, conversations get titles, move up with activity, are found,
renamed and deleted with undo; a favicon, dark mode, a composer pinned to the bottom; on a
phone the conversation first; a scatter plot's axes spanning its data, not zero.

One daphne server in offline mode for the module (a person runs tools with /name).
"""

import pytest

from conversations.models import ChatMessage, Conversation
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import approved_custom_tool, open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The first test also waits for the module's server to start (up to 120 s on a loaded machine).
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

DESKTOP, PHONE = {"width": 1400, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(django_db_setup):
    with serving({"EUNICE_CUSTOM_TOOLS": "1"}) as url:
        yield url


WIDE_CARDS = """
columns = [f"a rather long column name {n}" for n in range(8)]
result = {
    "message": "Wide cards.",
    "cards": [
        {"type": "table", "columns": columns,
         "rows": [[f"value-{r}-{c}-" + "x" * 30 for c in range(8)] for r in range(5)]},
        {"type": "chart", "spec": {"width": 1200, "data": {"values": [{"k": "a", "v": 1}, {"k": "b", "v": 2}]},
         "mark": "bar",
         "encoding": {"x": {"field": "k", "type": "nominal"}, "y": {"field": "v", "type": "quantitative"}}}},
    ],
}
"""
URL = "https://example.org/" + "a" * 300
WIDE_TABLE = "| " + " | ".join(f"column number {n}" for n in range(8)) + " |\n" + "|---" * 8 + "|\n"
WIDE_ANSWER = f"See {URL}\n\n{WIDE_TABLE}| {' | '.join('y' * 40 for _ in range(8))} |\n\n```\n{'z' * 400}\n```\n"


def store(conversation, role: str, text: str) -> None:
    ChatMessage.objects.create(
        conversation=conversation,
        message_id=f"{role}{ChatMessage.objects.count()}",
        tenant_id=TENANT,
        role=role,
        text=text,
    )


@pytest.fixture
def long_content(conversation):
    """Stored before the browser starts: Playwright's sync API runs an event loop on this thread."""
    approved_custom_tool({}, "wide_cards", WIDE_CARDS)
    store(conversation, "user", URL)
    store(conversation, "user", "x" * 40_000)
    store(conversation, "assistant", WIDE_ANSWER)


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_long_words_urls_tables_code_and_charts_never_widen_the_page(server, long_content, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        open_conversation(page, server, conversation)
        if viewport is DESKTOP:
            say(page, "/wide_cards")
            page.wait_for_selector("#messages .card-chart svg")
            page.wait_for_selector("#panel .card-table table")
        assert page_width(page) <= viewport["width"], viewport
        send = page.locator("#send").bounding_box()
        assert send["x"] + send["width"] <= viewport["width"], viewport
        # The wide things scroll inside themselves instead.
        scrolls = "(e) => e.scrollWidth > e.clientWidth && getComputedStyle(e).overflowX === 'auto'"
        assert page.eval_on_selector(".message.assistant .table-scroll", scrolls)
        assert page.eval_on_selector(".message.assistant pre", scrolls)
    page.set_viewport_size(DESKTOP)
    page.goto(f"{server}/c/{conversation.pk}/")
    panel = page.locator("#panel").bounding_box()
    assert panel["x"] + panel["width"] <= DESKTOP["width"]


@pytest.fixture
def two_conversations(conversation):
    """Ann's "Browser test" and, made after it, an untitled one."""
    return conversation, Conversation.objects.create(tenant_id=TENANT, user=conversation.user)


def titles(page) -> list[str]:
    return page.locator("#conversation-list li a").all_text_contents()


def test_a_first_message_names_the_conversation_and_activity_puts_it_on_top(server, two_conversations, browser_page):
    older, untitled = two_conversations
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, untitled)
    assert titles(page) == ["Untitled", "Browser test"]
    say(page, '/search_tools {"query": "make a plan"}')
    page.wait_for_selector(".tool.done")
    open_conversation(page, server, older)
    assert titles(page) == ['/search_tools {"query": "make a plan"}', "Browser test"]
    say(page, '/search_tools {"query": "draw a bar chart of zebra sightings"}')
    page.wait_for_selector(".tool.done")
    page.reload()
    assert titles(page) == ["Browser test", '/search_tools {"query": "make a plan"}']

    # what was said, not only titles (a word no tool's description holds, as tool results
    # are searched too)
    page.fill("input[name=q]", "zebra")
    page.press("input[name=q]", "Enter")
    page.wait_for_load_state()
    assert titles(page) == ["Browser test"]


def test_a_conversation_is_renamed_and_deleted_with_undo_from_the_list(server, two_conversations, browser_page):
    current, other = two_conversations
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, current)
    row = page.locator(f"#conversation-list li[data-id='{other.pk}']")
    row.locator("button.rename").click()
    page.fill(".rename-title", "Holiday plans")
    with page.expect_response(lambda r: r.request.method == "PATCH" and r.ok):
        page.press(".rename-title", "Enter")
    assert row.locator("a").text_content() == "Holiday plans"

    with page.expect_response(lambda r: r.request.method == "DELETE" and r.ok):
        row.locator("button.delete").click()
    assert "deleted" in row.text_content()
    with page.expect_response(lambda r: r.url.endswith("/restore/") and r.ok):
        row.locator("button.undo").click()
    page.reload()
    assert titles(page) == ["Holiday plans", "Browser test"]

    # Deleting the open conversation leaves its page; the start page offers the undo.
    page.locator(f"#conversation-list li[data-id='{current.pk}'] button.delete").click()
    page.wait_for_selector("#deleted-notice")
    assert titles(page) == ["Holiday plans"]
    page.click("#deleted-notice button")
    page.wait_for_url(f"{server}/c/{current.pk}/")
    assert titles(page) == ["Holiday plans", "Browser test"]


@pytest.fixture
def long_thread(conversation):
    for n in range(20):
        store(conversation, "user" if n % 2 else "assistant", f"Message {n}.\n\n" + "A line of text. " * 30)
    return conversation


def test_the_page_has_an_icon_a_dark_mode_a_pinned_composer_and_a_live_region(server, long_thread, browser_page):
    page = browser_page
    failed = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    sign_in(page, server)
    page.set_viewport_size(DESKTOP)
    open_conversation(page, server, long_thread)
    icon = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(f"{server}{icon}").ok and page.request.get(f"{server}/favicon.ico").ok
    composer = page.locator("#composer").bounding_box()
    assert composer["y"] + composer["height"] <= DESKTOP["height"]  # in view, though the thread is long
    assert page.get_attribute("#messages", "aria-live") == "polite"
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.emulate_media(color_scheme="dark")
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert light == "rgb(250, 250, 250)" and dark == "rgb(17, 20, 24)"
    assert failed == []


@pytest.fixture
def many_conversations(conversation):
    """A list long enough to fill a phone's screen, and a conversation with a card for the panel."""
    for n in range(15):
        Conversation.objects.create(tenant_id=TENANT, user=conversation.user, title=f"Another conversation {n}")
    store(conversation, "user", "How much rain?")
    ChatMessage.objects.create(
        conversation=conversation,
        message_id="a-with-card",
        tenant_id=TENANT,
        role="assistant",
        text="Here it is.",
        cards=[{"type": "table", "columns": ["city", "rain"], "rows": [["Oslo", 12], ["Bergen", 25]]}],
    )
    return conversation


def test_on_a_phone_the_conversation_and_the_composer_come_first(server, many_conversations, browser_page):
    page = browser_page
    sign_in(page, server)
    page.set_viewport_size(PHONE)
    open_conversation(page, server, many_conversations)
    page.wait_for_selector("#messages .message.assistant")
    top = "(e) => e.getBoundingClientRect().top + window.scrollY"  # in the page, wherever it is scrolled to
    messages = page.eval_on_selector("#messages", top)
    assert messages < page.eval_on_selector("#panel", top)
    assert messages < page.eval_on_selector("aside.conversations", top)
    # The thread and the composer are on the screen as the page opens, no scrolling needed.
    assert page.evaluate("window.scrollY") == 0
    composer = page.locator("#composer").bounding_box()
    assert 0 <= composer["y"] and composer["y"] + composer["height"] <= PHONE["height"]
    assert page.locator("#messages .message.assistant").bounding_box()["y"] < composer["y"]


def scatter_tool_code() -> str:
    """A custom tool answering with the scatter plot the chart tool makes of rain by year."""
    import pandas as pd

    from tools.charts import vega_lite

    frame = pd.DataFrame({"year": [2001, 2004, 2010], "rain": [800.5, 870.0, 950.0]})
    spec = vega_lite(frame, {"x": "year", "y": "rain", "mark": "point"})
    return f"result = {{'message': 'Rain by year.', 'cards': [{{'type': 'chart', 'spec': {spec!r}}}]}}\n"


AXES = """() => Array.from(document.querySelectorAll('#messages .card-chart svg .role-axis')).map((axis) => ({
  name: axis.getAttribute('aria-label') || '',
  labels: Array.from(axis.querySelectorAll('.role-axis-label text')).map((t) => t.textContent),
}))"""


@pytest.fixture
def scatter_tool():
    return approved_custom_tool({}, "rain_scatter", scatter_tool_code())


def test_a_scatter_plot_as_drawn_spans_its_data_not_zero(server, conversation, scatter_tool, browser_page):
    page = browser_page
    sign_in(page, server)
    page.set_viewport_size(DESKTOP)
    open_conversation(page, server, conversation)
    say(page, "/rain_scatter")
    page.wait_for_selector("#messages .card-chart svg .role-axis-label text")
    axes = {
        axis["name"][:6]: [float(label.replace(",", "")) for label in axis["labels"]] for axis in page.evaluate(AXES)
    }
    # Both axes start near the data (years 2001-2010, rain 800-950), not at zero.
    assert 1990 <= min(axes["X-axis"]) and max(axes["X-axis"]) <= 2020, axes
    assert 700 <= min(axes["Y-axis"]) and max(axes["Y-axis"]) <= 1000, axes

"""The chat page's history and its answers, in real Chromium: a reload shows what the person
saw (tool calls, text between them, thinking, charts, the panel, a cancelled answer as far
as it got); offline mode's results read as a person wants them; thinking per turn, closed;
a chart drawn once; question choices as buttons; Retry after a model error; the page
reconnects and the running answer goes on (or, ended while it connected, is read from what
is stored); the keyboard reaches it all; maps on a world layer with labels on hover.

One daphne server for the module, talking to one scripted model server: each test adds
the turns it needs to the script, and picks offline mode or the model with a ModelConfig
row (the test database is emptied between tests).
"""

from concurrent.futures import ThreadPoolExecutor

import pytest

from conversations.models import WorkingSetEntry
from llm.scripted import ScriptedMessagesServer
from llm.scripted.script import load_script
from tests.web.conftest import CHROMIUM, relayed_sockets, serving
from tests.web.test_browser import approved_custom_tool, open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The first test also waits for the module's server to start (up to 120 s on a loaded machine).
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture(scope="module")
def model():
    server = ScriptedMessagesServer([{"text": "a script needs a turn"}]).start()
    server.turns.clear()  # each test adds its own
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(django_db_setup, model):
    env = {"EUNICE_CUSTOM_TOOLS": "1", "EUNICE_TEST_SCRIPTED_MODEL_URL": model.url, "EUNICE_LLM_MAX_RETRIES": "0"}
    with serving(env) as url:
        yield url


def script(model, conversation, turns, tools=()):
    """The chat role talks to the scripted model, which answers with ``turns`` next."""
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    model.turns.extend(load_script(turns))
    for name in tools:  # offered to the model
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)


def offline():
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "offline", "model": "offline"})


CARDS_TOOL = """
result = {
    "message": "Rain by city.",
    "cards": [
        {"type": "chart", "title": "Rain", "spec": {
            "data": {"values": [{"city": "Oslo", "rain": 12}, {"city": "Bergen", "rain": 25}]},
            "mark": "bar",
            "encoding": {"x": {"field": "city", "type": "nominal"}, "y": {"field": "rain", "type": "quantitative"}}}},
        {"type": "table", "columns": ["city", "rain"], "rows": [["Oslo", 12], ["Bergen", 25]]},
        {"type": "map_display", "display_id": "m1",
         "sources": [{"id": "cities", "type": "geojson", "data": {"type": "FeatureCollection", "features": [
             {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10.75, 59.91]},
              "properties": {"city": "Oslo", "rain": 12}},
             {"type": "Feature", "geometry": {"type": "Point", "coordinates": [5.32, 60.39]},
              "properties": {"city": "Bergen", "rain": 25}}]}}],
         "layers": [{"id": "cities", "source": "cities", "type": "circle", "label": "city"}],
         "bounds": [[59.91, 5.32], [60.39, 10.75]]},
    ],
}
"""


@pytest.fixture
def cards_tool():
    return approved_custom_tool({}, "rain_cards", CARDS_TOOL)


def until_answer(page, test: str) -> None:
    """Wait until the first answer's text passes ``test``, JavaScript over ``text``."""
    first = "document.querySelector('.message.assistant .text')?.textContent ?? ''"
    page.wait_for_function(f"() => {{ const text = {first}; return {test}; }}")


def settled(page):
    page.wait_for_function("() => document.querySelector('#send').disabled === false")


def seen(page) -> dict:
    """What the person sees of the conversation, in a form two pages can be compared by."""
    return page.evaluate(
        """() => ({
          thread: Array.from(document.querySelectorAll('#messages > *')).map((n) =>
            `${n.tagName}.${n.className}: ${(n.querySelector('summary') || n).textContent.trim().slice(0, 80)}`),
          thinking: Array.from(document.querySelectorAll('#messages details.thinking pre')).map((n) => n.textContent),
          thinkingOpen: Array.from(document.querySelectorAll('#messages details.thinking')).some((n) => n.open),
          panel: Array.from(document.querySelectorAll('#panel > .card')).map((n) => n.className),
          charts: document.querySelectorAll('.card-chart svg').length,
          inlineCharts: document.querySelectorAll('#messages .card-chart svg').length,
        })"""
    )


@pytest.fixture
def tool_calling_model(model, conversation):
    script(
        model,
        conversation,
        [
            {
                "thinking": ["I should look at the rain."],
                "text": ["First ", "the numbers."],
                "tool_uses": [{"name": "rain_cards", "input": {}, "id": "toolu_r1"}],
            },
            {"thinking": ["Now I can answer."], "text": ["## Rain\n\nBergen ", "gets **more**."]},
        ],
        tools=["rain_cards"],
    )


def test_a_reload_shows_tool_calls_text_between_them_thinking_charts_and_the_panel(
    model, server, conversation, cards_tool, tool_calling_model, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Where does it rain more?")
    page.wait_for_selector(".tool.done")
    settled(page)
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    live = seen(page)
    # Thinking per turn, in the thread where it happened, closed; the chart drawn once.
    assert live["thinking"] == ["I should look at the rain.", "Now I can answer."]
    assert not live["thinkingOpen"]
    assert live["charts"] == 1 and live["inlineCharts"] == 1
    assert "card card-link card-chart-link" in live["panel"]

    page.reload()
    settled(page)
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    page.wait_for_selector("#messages .card-chart svg")
    again = seen(page)
    assert again == live
    texts = page.locator(".message.assistant .text").all_text_contents()
    assert texts == ["First the numbers.", "RainBergen gets more."]
    assert page.text_content(".tool.done summary") == "rain_cards done"


@pytest.fixture
def long_answer(model, conversation):
    script(model, conversation, [{"text": [f"word{n} " for n in range(400)], "delay": 0.03}])


def test_a_cancelled_answer_is_shown_as_far_as_it_got_and_escape_cancels(
    model, server, conversation, long_answer, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Talk for a long time")
    until_answer(page, "text.includes('word5')")
    page.keyboard.press("Escape")  # the keyboard stops it, as the Cancel button does
    page.wait_for_selector(".message.notice")
    settled(page)
    shown = page.text_content(".message.assistant .text")
    page.reload()
    settled(page)
    assert page.text_content(".message.notice") == "Cancelled."
    kept = page.text_content(".message.assistant .text")
    assert kept.startswith("word0 word1") and len(kept.split()) < 400
    assert shown.split()[:5] == kept.split()[:5]


@pytest.fixture
def failing_model(model, conversation):
    script(
        model,
        conversation,
        [
            {"error": {"status": 400, "type": "invalid_request_error", "message": "scripted failure"}},
            {"text": ["Recovered."]},
        ],
    )


def test_a_model_error_offers_retry_which_sends_the_message_again(
    model, server, conversation, failing_model, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Hello?")
    page.wait_for_selector(".message.error button.retry")
    settled(page)
    page.reload()  # the error is part of the history, Retry with it
    settled(page)
    page.focus(".message.error button.retry")
    page.keyboard.press("Enter")
    until_answer(page, "text === 'Recovered.'")
    assert page.locator(".message.user").all_text_contents() == ["Hello?", "Hello?"]


@pytest.fixture
def asking_model(model, conversation):
    script(
        model,
        conversation,
        [
            {
                "tool_uses": [
                    {
                        "name": "request_user_input",
                        "id": "toolu_q1",
                        "input": {"question": "Which city?", "choices": ["Oslo", "Bergen"]},
                    }
                ]
            },
            {"text": ["Bergen it is."], "expect": {"tool_result_contains": "Bergen"}},
        ],
        tools=["request_user_input"],
    )


def asked_on(page, server, conversation) -> None:
    """Sign in, open the conversation and ask what makes the model ask its question."""
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Pick one for me to ask about")
    page.wait_for_selector(".question button.choice")


def test_question_choices_are_buttons_the_keyboard_reaches(model, server, conversation, asking_model, browser_page):
    page = browser_page
    asked_on(page, server, conversation)
    assert page.locator(".question button.choice").all_text_contents() == ["Oslo", "Bergen"]
    assert page.evaluate("document.activeElement.textContent") == "Oslo"  # focus goes to the question
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector(".answered")
    assert page.text_content(".answered") == "You answered: Bergen"
    until_answer(page, "text === 'Bergen it is.'")
    assert not model.failures


def test_a_question_is_asked_again_after_a_reload_and_its_answer_goes_on(
    model, server, conversation, asking_model, browser_page
):
    page = browser_page
    asked_on(page, server, conversation)
    page.reload()
    page.wait_for_function("() => document.querySelector('#cancel').disabled === false")  # connected, turn running
    assert page.locator(".question p").first.text_content() == "Which city?"
    page.click(".question button.choice >> text=Bergen")
    until_answer(page, "text === 'Bergen it is.'")
    assert page.locator(".question").count() == 0
    assert not model.failures


def test_a_question_answered_in_one_tab_leaves_the_other(model, server, conversation, asking_model, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    other = page.context.browser.new_page()  # the same person, in a second window
    sign_in(other, server)
    open_conversation(other, server, conversation)
    say(page, "Pick one for me to ask about")
    other.wait_for_selector(".question button.choice")
    page.click(".question button.choice >> text=Bergen")
    other.wait_for_selector("p.answered >> text=Answered in another window.")
    assert other.locator("form.question").count() == 0
    until_answer(page, "text === 'Bergen it is.'")
    assert page.text_content("p.answered") == "You answered: Bergen"


WORDS = [f"tok{n} " for n in range(120)]


@pytest.fixture
def streaming_model(model, conversation):
    script(model, conversation, [{"text": WORDS, "delay": 0.03}])


def test_the_page_reconnects_and_the_running_answer_goes_on(model, server, conversation, streaming_model, browser_page):
    words = WORDS
    page = browser_page
    sockets = relayed_sockets(page)
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Stream a while")
    until_answer(page, "text.includes('tok3')")
    sockets[0].close()  # the network drops the socket
    page.wait_for_function("() => document.querySelector('#send').disabled === true")
    until_answer(page, "text.includes('tok119')")
    settled(page)
    assert len(sockets) == 2
    assert page.locator(".message.assistant").count() == 1
    # What streamed while the socket was down is drawn from the stored answer when it is done.
    until_answer(page, "text.startsWith('tok0 tok1')")
    assert page.text_content(".message.assistant .text").strip() == "".join(words).strip()
    assert page.locator(".disconnected").count() == 0


@pytest.fixture
def answer_running(conversation):
    """The page is drawn while an answer is being written: its turn has streamed "So far"."""
    from django.utils import timezone

    from conversations.models import TurnRecord
    from tests.conversations.test_timeline import stored

    stored(conversation, 1, "Go on", [("text_delta", {"text": "So far"})], status=TurnRecord.Status.RUNNING)
    # Run by a server process on another host, alive: its heartbeat is fresh.
    TurnRecord.objects.filter(conversation=conversation).update(owner="another-host:1:x", heartbeat_at=timezone.now())


def answer_ends(conversation):
    """The turn ends with its answer stored, as the loop leaves it."""
    from django.db import close_old_connections

    from conversations.models import ChatMessage, ConversationEvent, TurnRecord
    from tests.conftest import TENANT

    try:
        ChatMessage.objects.create(
            conversation=conversation, message_id="a1", tenant_id=TENANT, role="assistant", text="So far, and done."
        )
        ConversationEvent.objects.create(conversation=conversation, turn=1, sequence=3, event_type="done", data={})
        TurnRecord.objects.filter(conversation=conversation, turn=1).update(status=TurnRecord.Status.FINISHED)
    finally:
        close_old_connections()


def test_an_answer_that_ends_before_the_page_connects_leaves_the_page_usable(
    server, conversation, answer_running, browser_page
):
    """Its end went to the sockets that were there; the page reads it from what is stored."""
    page = browser_page
    opened = []

    def late(ws):
        if not opened:  # the answer ends between drawing the page and its socket joining
            with ThreadPoolExecutor(1) as pool:
                pool.submit(answer_ends, conversation).result(timeout=30)
        opened.append(ws)
        ws.connect_to_server()

    page.route_web_socket("**/ws/conversations/**", late)
    sign_in(page, server)
    page.goto(f"{server}/c/{conversation.pk}/")
    page.wait_for_function("() => document.querySelector('#send').disabled === false", timeout=20_000)
    assert len(opened) == 1
    assert page.locator(".message.assistant .text").all_text_contents() == ["So far, and done."]


@pytest.fixture
def offline_mode(conversation):
    offline()


def test_offline_results_read_as_a_person_wants(server, conversation, offline_mode, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)

    def run(command):
        count = page.locator(".message.assistant").count()
        say(page, command)
        # The first search builds the server's tool index: slow on a loaded machine.
        page.wait_for_function(
            f"() => document.querySelectorAll('.message.assistant').length > {count}", timeout=90_000
        )
        settled(page)
        return page.locator(".message.assistant").last

    answer = run('/search_tools {"query": "plan the steps"}')
    text = answer.text_content()
    assert "input_schema" not in text and '"type":"object"' not in text
    assert answer.locator("li", has_text="/plan").count() == 1
    assert "steps?: object[]" in answer.locator("li", has_text="/plan").text_content()

    answer = run('/search_tools {"wrong": 1}')
    assert page.locator(".tool.hint summary").last.text_content() == "search_tools: not run, see the hint"
    assert answer.locator("strong").first.text_content() == "Hint:"
    assert "did you mean" not in answer.text_content().lower()  # not the very tool just called
    assert "takes {query: string, limit?: integer}" in answer.text_content()

    answer = run("/frobnicate {}")
    assert page.locator(".tool summary").last.text_content() == "No tool is called frobnicate"
    assert "frobnicate done" not in page.text_content("#messages")
    assert answer.locator("strong").first.text_content() == "No tool is called frobnicate."

    answer = run('/query {"sql": "select 1 as one, \'two\' as two"}')
    assert answer.locator("table th").all_text_contents() == ["one", "two"]
    assert answer.locator("table td").all_text_contents() == ["1", "two"]

    answer = run('/query {"sql": "select * from nowhere"}')  # no such dataset: a hint, not "query done"
    assert page.locator(".tool summary").last.text_content() in ("query failed", "query: not run, see the hint")
    assert answer.locator("strong").first.text_content() in ("Error", "Hint:")


def test_a_map_has_a_world_layer_and_labels_on_hover(server, conversation, cards_tool, offline_mode, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "/rain_cards")
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    page.wait_for_function("() => document.querySelectorAll('#panel .leaflet-basemap-pane path').length > 0")
    # Natural Earth's countries at 1:110m: one path for the layer's visible countries.
    assert page.locator("#panel .leaflet-basemap-pane path").count() >= 1
    # ... and the land is seen: the layer's SVG has a size (a card rule once shrank it to 0 × 0).
    land = page.locator("#panel .leaflet-basemap-pane > svg").bounding_box()
    assert land["width"] > 100 and land["height"] > 100, land
    markers = page.locator("#panel .card-map_display path.leaflet-interactive")
    assert markers.count() == 2
    markers.first.hover()
    page.wait_for_selector(".leaflet-tooltip")
    assert page.text_content(".leaflet-tooltip") in ("Oslo", "Bergen")

"""The chat page in real Chromium, against the product served by daphne."""

import pytest
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


def open_conversation(page, server: str, conversation) -> None:
    """Open the chat page and wait until its websocket is connected (Send enabled)."""
    page.goto(f"{server}/c/{conversation.pk}/")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")


def say(page, text: str) -> None:
    """Type a message into the chat and send it."""
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def sign_in(page, server: str, username: str = "ann") -> None:
    page.goto(f"{server}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "a-good-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()


def test_a_user_signs_in_and_runs_a_tool_from_the_chat_page(server, conversation, browser_page, tmp_path):
    page = browser_page
    sign_in(page, server)
    assert page.url == f"{server}/"
    open_conversation(page, server, conversation)
    assert page.is_visible("#offline-notice")
    say(page, '/search_tools {"query": "plan the steps"}')
    page.wait_for_selector(".tool.done")
    answer = page.wait_for_selector(".message.assistant .text")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    assert "plan" in answer.text_content()
    assert page.is_disabled("#cancel")
    page.screenshot(path=str(tmp_path / "chat.png"))


@pytest.fixture
def talkative(scripted_model, conversation):
    """Must run before `server`: it sets the model the server process uses."""
    # A resident tool, offered in chat mode (plan is agentic-only, and a call to a tool
    # the call was not offered is refused with a hint).
    return scripted_model(
        [
            {
                "thinking": ["The user wants a plan."],
                "tool_uses": [{"name": "search_tools", "input": {"query": "make a plan"}, "id": "toolu_1"}],
            },
            {"text": ["Here ", "is ", "your ", "plan."]},
            {"text": [f"word{n} " for n in range(300)], "delay": 0.05},
        ]
    )


def test_a_tool_call_streams_in_and_a_long_answer_can_be_cancelled(talkative, server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Plan my trip")
    page.wait_for_selector(".tool.done")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    assert "The user wants a plan." in page.text_content("#messages details.thinking pre")
    assert page.text_content(".message.assistant .text") == "Here is your plan."
    say(page, "Now talk for a long time")
    page.wait_for_function("() => document.querySelectorAll('.message.assistant').length === 2")
    page.click("#cancel")
    page.wait_for_selector(".message.notice")  # the server's done(cancelled) arrived
    assert "Cancelled." in page.text_content(".message.notice")
    assert len(page.text_content(".message.assistant >> nth=1").split()) < 300


@pytest.fixture
def delegating(scripted_model, conversation):
    """A model that hands two tasks to helpers; runs before `server`, as `talkative`."""
    from conversations.models import WorkingSetEntry

    WorkingSetEntry.objects.create(conversation=conversation, tool_name="delegate_batch")
    return scripted_model(
        [
            {"tool_uses": [{"name": "delegate_batch", "input": {"tasks": ["one", "two"]}, "id": "toolu_1"}]},
            {"text": ["CHILD-A ", "streams ", "on."]},
            {"text": ["CHILD-B ", "streams ", "too."]},
            {"text": ["Both ", "done."]},
        ]
    )


def test_helpers_stream_into_labelled_panes_of_their_own(delegating, server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Do both")
    page.wait_for_function("() => document.querySelectorAll('.subtask.finished').length === 2")
    page.wait_for_function("() => document.querySelector('#send').disabled === false")
    assert page.text_content(".message.assistant .text") == "Both done."
    panes = page.query_selector_all(".subtask")
    assert sorted(p.query_selector("summary").text_content() for p in panes) == [
        "Helper 1: one · done",
        "Helper 2: two · done",
    ]
    assert sorted(p.query_selector(".subtask-text").text_content() for p in panes) == [
        "CHILD-A streams on.",
        "CHILD-B streams too.",
    ]


@pytest.fixture
def staff_user():
    user = get_user_model().objects.create_user("boss", password="a-good-password", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return user


def test_staff_run_a_tool_in_the_playground(staff_user, server, browser_page):
    page = browser_page
    sign_in(page, server, "boss")
    page.goto(f"{server}/playground/search_tools/")
    page.fill("input[data-field=query]", "make a plan")
    page.dispatch_event("input[data-field=query]", "change")
    assert '"query": "make a plan"' in page.input_value("#inputs")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("#rendered")
    assert page.text_content("#rendered").startswith("✓ ok.")
    assert page.is_visible("#log-row")


CHART_TOOL = """
result = {
    "message": "Here is the chart and the map.",
    "cards": [
        {"type": "chart", "spec": {
            "data": {"values": [{"city": "Oslo", "rain": 12}, {"city": "Bergen", "rain": 25}]},
            "transform": [{"calculate": "datum.rain * 10", "as": "mm"}],
            "mark": "bar",
            "encoding": {"x": {"field": "city", "type": "nominal"}, "y": {"field": "mm", "type": "quantitative"}}}},
        {"type": "map_display", "display_id": "m1",
         "layers": [{"points": [{"lat": 59.91, "lon": 10.75, "label": "Oslo"},
                                {"lat": 60.39, "lon": 5.32, "label": "Bergen"}]}]},
    ],
}
"""


def approved_custom_tool(model_env, name: str, code: str):
    """A custom tool of the test tenant, approved by a reviewer, with custom tools switched on."""
    from registry.custom_tools import approve_custom_tool, register_custom_tool

    model_env["EUNICE_CUSTOM_TOOLS"] = "1"
    from tests.sandbox.conftest import make_reviewer

    reviewer = make_reviewer("reviewer", TENANT)
    tool = register_custom_tool(
        name=name,
        code=code,
        description=f"The {name} test tool.",
        input_schema={"type": "object", "properties": {}},
        tenant_id=TENANT,
    )
    return approve_custom_tool(tool, acting_user=reviewer)


@pytest.fixture
def chart_tool(model_env):
    """An approved custom tool that answers with a chart card and a map card."""
    return approved_custom_tool(model_env, "rain_chart", CHART_TOOL)


def test_chart_and_map_cards_render_from_local_libraries(chart_tool, server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    # When the answer is done the page reads the stored answer's cards (merged, with citations).
    with page.expect_response(lambda r: "/messages/?order=newest&limit=1" in r.url and r.ok):
        say(page, "/rain_chart")
    # Drawn by the locally served vega-embed, its expression (the calculate transform)
    # interpreted: the page's policy forbids eval, and a refusal would fail the test.
    page.wait_for_selector("#messages .card-chart svg")
    assert "250" in page.text_content("#messages .card-chart svg")  # the y axis reaches 25 * 10
    page.wait_for_selector("#panel .card-map_display .leaflet-container")
    assert page.locator("#panel .card-map_display .leaflet-interactive").count() == 2  # the two cities
    # A chart is drawn once, in the conversation; the panel links to it.
    assert page.locator(".card-chart svg").count() == 1
    assert page.locator("#panel .card-chart-link button").count() == 1


HOSTILE_TOOL = """
result = {
    "message": "Cards made of data from anywhere.",
    "cards": [
        {"type": "map_display", "display_id": "m1", "layers": [{"points": [
            {"lat": 59.91, "lon": 10.75, "label": "<img src=x onerror=window.__pwned=1>Oslo"},
            {"lat": 60.39, "lon": 5.32, "label": "<img src=x onerror=window.__pwned=1>Bergen"}]}]},
        {"type": "file_download", "filename": "report.csv", "file_id": 7, "url": "javascript:window.__pwned=2"},
    ],
}
"""


@pytest.fixture
def hostile_tool(model_env):
    """An approved custom tool whose cards carry markup in a label and a javascript: link."""
    return approved_custom_tool(model_env, "hostile_cards", HOSTILE_TOOL)


def test_a_cards_label_is_shown_as_text_and_its_link_stays_on_the_site(
    hostile_tool, server, conversation, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "/hostile_cards")
    page.wait_for_selector("#panel .card-map_display .leaflet-interactive")
    page.locator("#panel .card-map_display .leaflet-interactive").first.hover()
    tooltip = page.wait_for_selector(".leaflet-tooltip")

    assert tooltip.text_content() == "<img src=x onerror=window.__pwned=1>Oslo"  # the markup as text
    assert page.get_attribute("#panel .card-file_download a", "href") == "/files/7/"
    assert page.evaluate("window.__pwned") is None


def test_a_user_uploads_a_csv_and_sees_a_chart_of_it(server, conversation, browser_page, tmp_path):
    csv = tmp_path / "rain.csv"
    csv.write_text("city,rain\nOslo,12\nBergen,25\nTromso,8\n")
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    page.set_input_files("#upload-file", str(csv))
    page.click("#upload button[type=submit]")
    page.wait_for_function("() => document.querySelector('#upload-status').textContent.includes('is ready')")
    assert '"rain" is ready (3 rows)' in page.text_content("#upload-status")
    say(page, '/create_chart {"dataset": "rain", "x": "city", "y": "rain"}')
    page.wait_for_selector("#messages .card-chart svg")
    page.wait_for_selector("#panel .card-file_download a.download")
    href = page.get_attribute("#panel .card-file_download a.download", "href")
    assert href.startswith("/files/")


@pytest.fixture
def superuser():
    user = get_user_model().objects.create_user("root", password="a-good-password", is_staff=True, is_superuser=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return user


# Every kind of page: ours, the admin's and the API's browsable schema.
PAGES = (
    "/",
    "/playground/",
    "/playground/search_tools/",
    "/telemetry/",
    "/admin/",
    "/admin/registry/tooldefinition/",
    "/admin/auth/user/add/",
    "/api/schema/ui/",
)


@pytest.fixture
def own_conversation(superuser):
    return Conversation.objects.create(tenant_id=TENANT, user=superuser, title="Policy")


def test_every_page_sends_a_content_security_policy_and_breaks_none_of_it(own_conversation, server, browser_page):
    page = browser_page
    sign_in(page, server, "root")
    for path in (*PAGES, f"/c/{own_conversation.pk}/"):
        response = page.goto(f"{server}{path}")
        assert response.status == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "object-src 'none'" in policy, (path, policy)
        assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0], (path, policy)
        page.wait_for_load_state("networkidle")
    # No page allows eval (charts are drawn by Vega's interpreter); only the page that
    # draws charts lets Vega style its elements.
    chat = response.headers["content-security-policy"]
    assert "'unsafe-eval'" not in chat and "'unsafe-inline'" in chat.split("style-src")[1].split(";")[0]
    elsewhere = page.goto(f"{server}/telemetry/").headers["content-security-policy"]
    assert "'unsafe-eval'" not in elsewhere and "'unsafe-inline'" not in elsewhere

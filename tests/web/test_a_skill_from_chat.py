"""A skill's whole life in real Chromium: the model writes it in one conversation, a staff
member approves it in the admin, and the model uses it in a later conversation.

One daphne server, one scripted model: in the first conversation it finds create_skill
with search_tools and saves the skill; in the second it finds use_skill and loads it.
"""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from conversations.models import Conversation
from llm.scripted import ScriptedMessagesServer
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.web.conftest import CHROMIUM, serving
from tests.web.test_browser import open_conversation, say, sign_in
from tests.web.test_call_approvals import db
from tools.models import CapabilityStatus, Skill

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

NOTES = {
    "name": "weekly-standup-notes",
    "description": "Write the team's weekly stand-up notes; use when asked for this week's summary.",
    "instructions": "1. Read `assets/template.md`.\n2. Fill in Done, Next and Blocked from the conversation.",
    "files": {"assets/template.md": "## Done\n## Next\n## Blocked\n"},
}


def tool_use(name: str, inputs: dict, n: int) -> dict:
    return {"tool_uses": [{"name": name, "input": inputs, "id": f"toolu_{n}"}]}


SCRIPT = [
    tool_use("search_tools", {"query": "save a reusable skill with instructions for later"}, 1),
    tool_use("create_skill", NOTES, 2),
    {"text": ["Saved the skill; ", "a staff member approves it before it is used."]},
    tool_use("search_tools", {"query": "load a skill and follow its instructions"}, 3),
    tool_use("use_skill", {"name": "weekly-standup-notes"}, 4),
    {"text": ["Here are this week's notes, ", "written with the stand-up skill."]},
]


@pytest.fixture(scope="module")
def scripted():
    model = ScriptedMessagesServer(SCRIPT).start()
    yield model
    model.stop()


@pytest.fixture(scope="module")
def server(django_db_setup, scripted):
    with serving({"EUNICE_TEST_SCRIPTED_MODEL_URL": scripted.url, "EUNICE_LLM_MAX_RETRIES": "0"}) as url:
        yield url


@pytest.fixture
def chat_model(db):
    from llm.models import ModelConfig

    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})


@pytest.fixture
def later_conversation(conversation):
    return Conversation.objects.create(tenant_id=TENANT, user=conversation.user, title="The next week")


@pytest.fixture
def reviewer(db):
    """Staff of the tenant who may review skills. Made before the browser starts."""
    user = get_user_model().objects.create_user("rita", password="a-good-password", is_staff=True)
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    codenames = ["approve_skill", "view_skill"]
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="tools", codename__in=codenames))
    return user


def tool_result_text(scripted, tool_use_id: str) -> str:
    """What the model was told a call returned."""
    for request in scripted.requests:
        for message in request.messages:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                    content = block.get("content")
                    if isinstance(content, list):
                        return " ".join(part.get("text", "") for part in content)
                    return str(content)
    return ""


def approve_in_the_admin(browser, server: str) -> str:
    """Rita signs in, opens Tools → Skills and approves the pending skill; the admin's message."""
    from playwright.sync_api import Page

    context = browser.new_context()
    page: Page = context.new_page()
    page.set_default_timeout(45_000)
    sign_in(page, server, "rita")
    page.goto(f"{server}/admin/tools/skill/")
    row = page.locator("#result_list tr", has_text="weekly-standup-notes")
    row.locator("input[name=_selected_action]").check()
    page.select_option("select[name=action]", "approve_selected")
    page.click("button[name=index]")
    said = page.locator(".messagelist").inner_text()
    context.close()
    return said


def test_a_skill_created_in_chat_is_approved_in_the_admin_and_used_later(
    server, scripted, chat_model, conversation, later_conversation, reviewer, browser_page
):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "Keep how we write the weekly stand-up notes as a skill.")
    page.wait_for_selector(".message.assistant >> text=a staff member approves it", timeout=90_000)
    assert "Saved skill weekly-standup-notes" in tool_result_text(scripted, "toolu_2")
    assert db(lambda: Skill.objects.get(tenant_id=TENANT).status) == CapabilityStatus.PENDING

    said = approve_in_the_admin(page.context.browser, server)
    assert "Skill weekly-standup-notes is approved" in said
    assert db(lambda: Skill.objects.get(tenant_id=TENANT).is_usable())

    open_conversation(page, server, later_conversation)
    say(page, "Write this week's stand-up notes.")
    page.wait_for_selector(".message.assistant >> text=written with the stand-up skill", timeout=90_000)
    loaded = tool_result_text(scripted, "toolu_4")
    assert "# Skill weekly-standup-notes" in loaded
    assert "1. Read `assets/template.md`." in loaded and "- assets/template.md (" in loaded
    assert scripted.failures == []

"""The chat page in real Chromium, against the product served by daphne."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.test_background_jobs import database_url

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    """The real ASGI app under daphne, on the test database."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "SECRET_KEY": settings.SECRET_KEY,
           "DJANGO_SETTINGS_MODULE": "eunice.test_settings", "ALLOWED_HOSTS": "127.0.0.1"}
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EUNICE_DEFAULT_MODEL"):
        env.pop(name, None)
    process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "eunice.asgi:application"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        yield page
        browser.close()


@pytest.fixture
def conversation():
    """Made before the browser starts: Playwright's sync API runs an event loop on this thread."""
    user = get_user_model().objects.create_user("ann", password="a-good-password")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="Browser test")


def test_a_user_signs_in_and_runs_a_tool_from_the_chat_page(server, conversation, browser_page, tmp_path):
    page = browser_page
    page.goto(f"{server}/login/")
    page.fill("input[name=username]", "ann")
    page.fill("input[name=password]", "a-good-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert page.url == f"{server}/", page.content()[:3000]
    page.goto(f"{server}/c/{conversation.pk}/")
    assert page.is_visible("#offline-notice")
    page.fill("#prompt", '/search_tools {"query": "plan the steps"}')
    page.press("#prompt", "Enter")
    page.wait_for_selector(".tool.done")
    answer = page.wait_for_selector(".message.assistant .text")
    page.wait_for_function("document.querySelector('#send').disabled === false")
    assert "plan" in answer.text_content()
    assert page.is_disabled("#cancel")
    page.screenshot(path=str(tmp_path / "chat.png"))

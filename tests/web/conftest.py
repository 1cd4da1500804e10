"""The browser tests' fixtures: the product served by daphne, a Chromium page, Ann's
conversation; and each test's outcome made visible to fixtures (for screenshots on failure)."""

import http.client
import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from conversations.models import Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.ports import held_port
from tests.test_background_jobs import database_url

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture
def model_env():
    """Environment for the server process; a test adds a scripted model to it."""
    return {}


@pytest.fixture
def scripted_model(model_env):
    """A scripted Messages API server the product's chat role talks to."""
    from llm.models import ModelConfig
    from llm.scripted import ScriptedMessagesServer

    holder = {}

    def start(turns):
        server = ScriptedMessagesServer(turns).start()
        holder["server"] = server
        model_env.update({"EUNICE_TEST_SCRIPTED_MODEL_URL": server.url, "EUNICE_LLM_MAX_RETRIES": "0"})
        ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
        return server

    yield start
    if "server" in holder:
        holder["server"].stop()


@contextmanager
def serving(extra_env: dict[str, str]):
    """The real ASGI app under daphne, on the test database; yields its URL.

    Daphne adopts a socket this process already listens on, so no other process can be
    given the port in between, and the first answer to a request on it is daphne's.
    """
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_SETTINGS_MODULE": "eunice.test_settings",
        "ALLOWED_HOSTS": "127.0.0.1",
    }
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "EUNICE_DEFAULT_MODEL"):
        env.pop(name, None)
    env.update(extra_env)
    # The server's own account, for a failing test: in this run's var directory (EUNICE_VAR_DIR),
    # which exists, and is nobody else's.
    log_path = Path(settings.VAR_DIR) / "test-server.log"
    log = open(log_path, "w")
    SERVER_LOGS.append(log_path)
    listener = held_port()
    port = listener.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "--fd", str(listener.fileno()), "eunice.asgi:application"],
        cwd=ROOT,
        env=env,
        pass_fds=(listener.fileno(),),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    listener.close()  # daphne has its own copy
    # Generous: on a loaded shared machine daphne's start-up alone has taken over 30 s.
    deadline = time.monotonic() + 120
    while not answers(port):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            log.close()
            pytest.fail(f"the server did not start answering; see {log_path}")
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        SERVER_LOGS.remove(log_path)


# The logs of the servers now running: a failing test's report ends with their last lines,
# since CI removes its var directory (and the next test's server writes over the file).
SERVER_LOGS: list[Path] = []
SERVER_LOG_LINES = 80


def answers(port: int) -> bool:
    """Whether the server answers an HTTP request (the kernel queues connections on the
    adopted socket before daphne accepts them, so a connect alone proves nothing)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/login/")
        return connection.getresponse().status > 0
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


@pytest.fixture
def server(model_env):
    """A server for this test only (a module that can share one overrides this)."""
    with serving(model_env) as url:
        yield url


SCREENSHOTS = Path(settings.VAR_DIR) / "test-screenshots"


@pytest.fixture
def browser_page(request):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.set_default_timeout(45_000)  # generous: CI runs two passes at once on 2 cores
        errors = []  # uncaught exceptions and unhandled rejections in the page's scripts
        page.on("pageerror", lambda error: errors.append(error))
        # Content-Security-Policy refusals (Chromium reports each one on the console).
        page.on(
            "console",
            lambda message: (
                errors.append(f"{page.url}: {message.text}")
                if "Content Security Policy" in message.text or message.text.startswith("Refused to")
                else None
            ),
        )
        yield page
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True)
            # What the person saw, in the report (the screenshot is gone with CI's var directory).
            report.sections.append(("the page's text at the failure", page.inner_text("body")[-4000:]))
        browser.close()
        assert not errors, f"the page's scripts failed or broke its Content-Security-Policy: {errors}"


def relayed_sockets(page) -> list:
    """Route the page's conversation sockets through Playwright, to the real server: the
    list fills with each socket as it opens, and a test can drop one (``.close()``)."""
    sockets: list = []

    def relay(ws):
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket("**/ws/conversations/**", relay)
    return sockets


@pytest.fixture
def conversation():
    """Made before the browser starts: Playwright's sync API runs an event loop on this thread."""
    user = get_user_model().objects.create_user("ann", password="a-good-password")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="Browser test")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    if report.when == "call" and report.failed:
        for path in SERVER_LOGS:
            tail = path.read_text(errors="replace").splitlines()[-SERVER_LOG_LINES:]
            report.sections.append((f"the server's log, last {len(tail)} lines", "\n".join(tail)))
    return report

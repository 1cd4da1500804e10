"""The server SIGKILLed in the middle of a turn and started again: the interrupted turn is
closed, visible and replayable, and the conversation answers its next message."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from conversations.models import (
    ChatMessage,
    Conversation,
    ConversationEvent,
    TurnRecord,
)
from conversations.replay import replay
from llm.models import ModelConfig
from llm.scripted import ScriptedMessagesServer
from registry.models import TenantMembership
from tests.conftest import TENANT
from tests.ports import free_port, listens
from tests.test_background_jobs import database_url

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


class Server:
    """The product's ASGI app under uvicorn, as scripts/run serves it, on the test database."""

    def __init__(self, model_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "SECRET_KEY": settings.SECRET_KEY,
            "DJANGO_SETTINGS_MODULE": "eunice.test_settings",
            "ALLOWED_HOSTS": "127.0.0.1",
            "EUNICE_TEST_SCRIPTED_MODEL_URL": model_url,
            "EUNICE_LLM_MAX_RETRIES": "0",
            "EUNICE_CLOSE_DEAD_TURNS_AT_START_UP": "1",
            "EUNICE_PRELOAD_TOOL_SEARCH": "0",
            "EUNICE_PRELOAD_SANDBOX": "0",
        }
        self.process: subprocess.Popen | None = None
        (ROOT / "var").mkdir(exist_ok=True)
        self.log = open(ROOT / "var" / "fault-server.log", "a")  # noqa: SIM115 (closed by stop)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--loop",
                "uvloop",
                "--http",
                "httptools",
                "--ws",
                "websockets",
                "--lifespan",
                "off",
                "eunice.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=self.log,
        )

        def listening() -> bool:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited ({self.process.returncode}); see var/fault-server.log")
            return listens(self.process.pid, self.port)

        wait_for(listening, 120, "the server to listen")  # generous: start-up is slow on a loaded machine

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def user_and_conversation():
    user = get_user_model().objects.create_user("ann", password="pw")
    TenantMembership.objects.create(user=user, tenant_id=TENANT)
    ModelConfig.objects.update_or_create(role="chat", defaults={"provider": "anthropic", "model": "claude-test"})
    conversation = Conversation.objects.create(tenant_id=TENANT, user=user, title="Fault")
    return Token.objects.create(user=user).key, conversation


def test_a_server_killed_mid_turn_leaves_an_interrupted_turn_and_the_next_message_is_answered(user_and_conversation):
    token, conversation = user_and_conversation
    model = ScriptedMessagesServer(
        [
            {"text": ["Let me ", "think ", "about ", "that."], "pause_after": 4},  # streams a word, then hangs
            {"text": ["Back again."]},
        ]
    ).start()
    server = Server(model.url)
    headers = {"Authorization": f"Token {token}"}
    messages = f"/api/conversations/{conversation.pk}/messages/"
    try:
        server.start()

        def first_message():
            try:
                requests.post(server.url + messages, json={"text": "first"}, headers=headers, timeout=120)
            except requests.RequestException:
                pass  # the server dies under it

        sender = threading.Thread(target=first_message)
        sender.start()
        wait_for(lambda: len(model.requests) == 1, 60, "the model call of the first turn")
        assert TurnRecord.objects.get(conversation=conversation, turn=1).status == "running"

        server.kill()
        sender.join(30)
        model.resume()
        server.start()  # its start-up closes the turn the killed process left running

        record = TurnRecord.objects.get(conversation=conversation, turn=1)
        assert record.status == "interrupted" and "server stopped" in record.interrupted_reason
        events = requests.get(
            server.url + f"/api/conversations/{conversation.pk}/events/", headers=headers, timeout=60
        ).json()["results"]
        assert [(e["turn"], e["event_type"]) for e in events] == [(1, "user_message"), (1, "interrupted")]

        answer = requests.post(server.url + messages, json={"text": "are you there?"}, headers=headers, timeout=120)

        assert answer.status_code == 201, answer.text
        assert answer.json()["message"]["text"] == "Back again."
    finally:
        server.stop()
        model.stop()
    assert list(ChatMessage.objects.filter(conversation=conversation).values_list("role", "text")) == [
        ("user", "first"),
        ("user", "are you there?"),
        ("assistant", "Back again."),
    ]
    assert list(TurnRecord.objects.filter(conversation=conversation).values_list("turn", "status")) == [
        (1, "interrupted"),
        (2, "finished"),
    ]
    assert ConversationEvent.objects.filter(conversation=conversation, turn=2, event_type="done").exists()
    report = replay(conversation)
    assert report.identical, report.first_difference
    assert (report.turns, report.interrupted) == (2, 1)
    call_command("replay_conversation", conversation.pk)  # exits 1 on a difference
    assert model.failures == []

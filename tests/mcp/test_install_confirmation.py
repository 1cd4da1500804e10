"""Installing from chat waits for the person's click on exactly what will run (registry.approvals)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.test import Client

from conversations import approvals as decisions
from conversations.models import ChatMessage, Conversation, ConversationEvent
from conversations.replay import replay
from eunice.asgi import application
from registry.approvals import ApprovalConflict, ApprovalNotFound
from registry.context import ToolContext
from registry.models import (
    ApprovalPolicy,
    ApprovalStatus,
    MCPAuditLog,
    MCPServer,
    PendingApproval,
    TenantMembership,
    ToolDefinition,
    ToolStatus,
)
from tests.conftest import OTHER_TENANT, TENANT
from tests.mcp.conftest import WAIT, mcp
from tests.mcp.conftest import approve as approve_listed
from tests.test_background_jobs import database_url

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def person(username: str, tenant: str = TENANT, **fields):
    user = get_user_model().objects.create_user(username, password="pw", **fields)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    return user


@pytest.fixture
def staff():
    return person("sam", is_staff=True)


@pytest.fixture
def conversation(staff):
    return Conversation.objects.create(tenant_id=TENANT, user=staff, title="Tools")


def ask_to_install(registry, conversation, **inputs):
    """The model's call, with the context a chat turn gives it."""
    context = ToolContext(tenant_id=TENANT, user_id=str(conversation.user.pk), conversation_id=conversation.pk)
    return registry.execute_tool("install_mcp_server", {"id": "time", "name": "time", **inputs}, context)


def approve(row, user, **options):
    return decisions.decide(str(row.pk), "approve", acting_user=user, expected_hash=row.args_hash, **options)


def approving_fails(row, user, match: str) -> None:
    with pytest.raises(ApprovalConflict, match=match):
        approve(row, user)
    assert not MCPServer.objects.exists()


def test_the_models_confirm_true_installs_nothing(registry, conversation):
    result = ask_to_install(registry, conversation, confirm=True)
    assert not MCPServer.objects.exists()
    assert "confirm: not an accepted field" in result.content


def test_the_models_call_only_asks_the_person_and_says_it_cannot_approve(registry, conversation):
    result = ask_to_install(registry, conversation)
    assert not MCPServer.objects.exists()
    assert "The person must approve it in the chat page" in result.content
    assert "You cannot approve it" in result.content
    row = PendingApproval.objects.get()
    assert (row.status, row.user, row.conversation_id) == (ApprovalStatus.PENDING, conversation.user, conversation.pk)
    assert row.shown["command"] == [sys.executable, "-m", "mcp_server_time"]
    assert row.shown["package"] == "mcp-server-time" and "(installed here)" in row.shown["version"]
    assert result.cards == [
        {
            "type": "approval",
            "approval_id": str(row.pk),
            "args_hash": row.args_hash,
            "tool": "install_mcp_server",
            "status": "pending",
            "shown": row.shown,
            "editable": False,
            "expires_at": row.expires_at.isoformat(),
        }
    ]


def test_asking_again_for_the_same_call_keeps_one_pending_approval(registry, conversation):
    ask_to_install(registry, conversation)
    ask_to_install(registry, conversation)
    assert PendingApproval.objects.count() == 1


def test_the_click_installs_exactly_the_shown_command_and_reports_it(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    card = approve(row, staff)
    server = MCPServer.objects.get(name="time")
    assert [server.command, *server.args] == row.shown["command"]
    assert server.approval_policy == ApprovalPolicy.MANUAL  # its new tools wait for staff review
    row.refresh_from_db()
    assert row.status == ApprovalStatus.APPROVED and row.decided_by == staff and row.executed_at is not None
    assert "Installed time" in row.outcome and card["outcome"] == row.outcome
    assert MCPAuditLog.objects.filter(action="create", actor="sam", server_name="time").exists()
    told = ChatMessage.objects.filter(conversation=conversation, role="user").last()
    assert told.text.startswith('[Approval] I approved install_mcp_server {"id": "time", "name": "time"}. It ran')
    event = ConversationEvent.objects.get(conversation=conversation, event_type="decision")
    assert event.data["status"] == "approved" and event.data["approval"] == str(row.pk)
    assert replay(conversation).identical, replay(conversation).first_difference


def test_the_tools_of_a_server_installed_from_chat_wait_for_staff_review(registry, conversation, staff, manager):
    ask_to_install(registry, conversation)
    approve(PendingApproval.objects.get(), staff)
    assert manager.wait_connected(MCPServer.objects.get(name="time").pk, WAIT)
    tool = mcp("get_current_time", "time")
    rows = ToolDefinition.objects.live().filter(name=tool)
    assert rows.exists() and not rows.filter(status=ToolStatus.APPROVED).exists()
    context = ToolContext(tenant_id=TENANT, user_id=str(staff.pk), conversation_id=conversation.pk)
    assert "unknown tool" in registry.execute_tool(tool, {"timezone": "Asia/Tokyo"}, context).content
    approve_listed(tool)
    assert "Asia/Tokyo" in registry.execute_tool(tool, {"timezone": "Asia/Tokyo"}, context).content


def test_a_second_click_runs_nothing_again(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    approve(row, staff)
    approve(row, staff)
    assert MCPAuditLog.objects.filter(action="create").count() == 1
    assert ChatMessage.objects.filter(conversation=conversation, text__startswith="[Approval]").count() == 1


def test_rejecting_runs_nothing_and_tells_the_model_why(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    decisions.decide(str(row.pk), "reject", acting_user=staff, expected_hash=None, reason="not this one")
    assert not MCPServer.objects.exists()
    told = ChatMessage.objects.filter(conversation=conversation, role="user").last()
    assert told.text.endswith("nothing was run. My reason: not this one")
    approving_fails(row, staff, "already rejected")


def test_another_user_of_the_tenant_cannot_decide(registry, conversation):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    colleague = person("cat", is_staff=True)
    with pytest.raises(PermissionDenied, match="only the person whose conversation asked"):
        approve(row, colleague)
    assert not MCPServer.objects.exists()
    assert PendingApproval.objects.get().status == ApprovalStatus.PENDING


def test_a_user_of_another_tenant_cannot_even_find_it(registry, conversation):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    outsider = person("eve", tenant=OTHER_TENANT, is_staff=True, is_superuser=True)
    with pytest.raises(ApprovalNotFound):
        approve(row, outsider)
    assert PendingApproval.objects.get().status == ApprovalStatus.PENDING


def test_a_user_with_the_permission_may_decide_for_their_tenant(registry, conversation):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    lead = person("lee", is_staff=True)
    lead.user_permissions.add(Permission.objects.get(codename="decide_pendingapproval"))
    lead = get_user_model().objects.get(pk=lead.pk)  # permissions are cached per object
    approve(row, lead)
    assert MCPServer.objects.filter(name="time").exists()


def test_arguments_changed_after_they_were_shown_fail_the_hash(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    evil = {**row.shown, "command": ["/bin/sh", "-c", "echo owned"], "launch": "/bin/sh -c 'echo owned'"}
    PendingApproval.objects.filter(pk=row.pk).update(shown=evil)
    approving_fails(row, staff, "changed after it was shown")


def test_a_click_with_another_hash_than_the_row_is_refused(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    with pytest.raises(ApprovalConflict, match="not the call you were shown"):
        decisions.decide(str(row.pk), "approve", acting_user=staff, expected_hash="0" * 64)
    assert not MCPServer.objects.exists()


def test_an_approval_runs_only_its_own_arguments(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    PendingApproval.objects.filter(pk=row.pk).update(status=ApprovalStatus.APPROVED, decided_by=staff)
    context = ToolContext(tenant_id=TENANT, user_id=str(staff.pk), approval_id=str(row.pk))
    result = registry.execute_tool("install_mcp_server", {"id": "time", "name": "other"}, context)
    assert (
        result.content == "✗ error (ApprovalConflict): not installed: these are not the arguments the person approved"
    )
    assert not MCPServer.objects.exists()


def test_an_expired_approval_cannot_be_approved(registry, conversation, staff):
    from django.utils import timezone

    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    PendingApproval.objects.filter(pk=row.pk).update(expires_at=timezone.now())
    assert decisions.pending_cards(conversation) == []  # no card to click after a reload
    approving_fails(row, staff, "already expired")


def test_another_process_started_later_sees_the_pending_approval_and_decides_it(registry, conversation, staff):
    """The row is the state: a fresh server process (a restart) lists and approves it."""
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    code = f"""
import django; django.setup()
from django.contrib.auth import get_user_model
from conversations.models import Conversation
from conversations.approvals import decide, pending_cards
from registry.mcp.manager import get_manager
cards = pending_cards(Conversation.objects.get(pk={conversation.pk!r}))
print("pending", [card["approval_id"] for card in cards])
owner = get_user_model().objects.get(pk={staff.pk})
card = cards[0]
print("status", decide(card["approval_id"], "approve", acting_user=owner, expected_hash=card["args_hash"])["status"])
get_manager().stop()
"""
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "eunice.test_settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT * 4
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"pending ['{row.pk}']" in done.stdout and "status approved" in done.stdout
    assert MCPServer.objects.filter(name="time").exists()
    assert PendingApproval.objects.get().executed_at is not None


def cookie_for(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def open_socket(conversation, user) -> WebsocketCommunicator:
    """The chat page's socket on ``conversation``, signed in as ``user``."""
    cookie = await sync_to_async(cookie_for)(user)
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost"), (b"cookie", cookie)]
    ws = WebsocketCommunicator(application, f"/ws/conversations/{conversation.pk}/", headers=headers)
    assert (await ws.connect())[0]
    return ws


async def click_approve(ws: WebsocketCommunicator, row) -> dict:
    """The card's Approve button: the decision over the socket, and the first answer."""
    await ws.send_json_to(
        {"type": "approval", "approval_id": str(row.pk), "decision": "approve", "args_hash": row.args_hash}
    )
    return await ws.receive_json_from(timeout=WAIT)


def test_the_click_over_the_websocket_installs_and_every_tab_is_told(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()

    async def click():
        ws = await open_socket(conversation, staff)
        chunk = await click_approve(ws, row)
        await ws.disconnect()
        return chunk

    chunk = async_to_sync(click)()
    assert chunk["type"] == "approval_decided" and chunk["card"]["status"] == "approved"
    assert "Installed time" in chunk["card"]["outcome"]
    assert MCPServer.objects.filter(name="time").exists()


def test_pending_approvals_are_listed_over_rest_and_decided_there(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    client = Client()
    client.force_login(staff)
    listed = client.get(f"/api/approvals/?status=pending&conversation={conversation.pk}").json()
    assert [item["id"] for item in listed["results"]] == [str(row.pk)]
    assert listed["results"][0]["shown"]["launch"] == row.shown["launch"]
    refused = client.post(f"/api/approvals/{row.pk}/approve/", {"args_hash": "f" * 64}, content_type="application/json")
    assert refused.status_code == 409
    done = client.post(
        f"/api/approvals/{row.pk}/approve/", {"args_hash": row.args_hash}, content_type="application/json"
    )
    assert done.status_code == 200 and done.json()["status"] == "approved"
    other = Client()
    other.force_login(person("eve", tenant=OTHER_TENANT))
    assert other.get("/api/approvals/").json()["results"] == []
    assert other.post(f"/api/approvals/{row.pk}/reject/", {}, content_type="application/json").status_code == 404


def test_the_chat_page_shows_a_pending_approval_again_after_a_reload(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    client = Client()
    client.force_login(staff)
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    start = page.index('<script id="pending-approvals" type="application/json">')
    cards = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    assert [card["approval_id"] for card in cards] == [str(row.pk)]


def test_a_socket_decides_only_its_own_conversations_calls(registry, conversation, staff):
    ask_to_install(registry, conversation)
    row = PendingApproval.objects.get()
    elsewhere = Conversation.objects.create(tenant_id=TENANT, user=staff, title="Another")

    async def click():
        ws = await open_socket(elsewhere, staff)
        chunk = await click_approve(ws, row)
        await ws.send_json_to({"type": "approval", "approval_id": 7, "decision": "approve"})
        malformed = await ws.receive_json_from(timeout=WAIT)
        await ws.disconnect()
        return chunk, malformed

    chunk, malformed = async_to_sync(click)()
    assert chunk == {"type": "error", "message": f"the decision was not taken: no approval '{row.pk}'"}
    assert malformed["type"] == "error" and "'approval_id', 'decision' and 'args_hash'" in malformed["message"]
    assert not MCPServer.objects.exists() and PendingApproval.objects.get().status == "pending"

"""Superusers see every tenant; staff act only within their own: admin, telemetry, playground, query_telemetry.

The cast: a superuser, staff of tenant A (with every view permission), a plain
user of A and a plain user of B. Every page is checked with a row of each tenant.
"""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from conversations.models import ChatMessage, Conversation, ConversationEvent, Notification, PolicyRule, UsageLog
from datacatalog.models import GeneratedFile
from registry.models import MCPAuditLog, TenantMembership, ToolExecutionLog
from tests.conftest import OTHER_TENANT, TENANT
from tools.models import InsightDefinition

pytestmark = pytest.mark.django_db


def person(name, tenant=None, **flags):
    user = get_user_model().objects.create_user(name, **flags)
    if tenant:
        TenantMembership.objects.create(user=user, tenant_id=tenant)
    return user


@pytest.fixture
def cast():
    staff = person("staff_a", TENANT, is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    return {
        "superuser": person("root", is_staff=True, is_superuser=True),
        "staff": staff,
        "member": person("ann_a", TENANT),
        "other": person("bob_b", OTHER_TENANT),
    }


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def rows_of(tenant: str, owner) -> dict:
    """One row of each tenant-owned model the admin shows, marked with the tenant's name."""
    conversation = Conversation.objects.create(tenant_id=tenant, user=owner, title=f"talk-{tenant}")
    return {
        "conversations/conversation": conversation,
        "conversations/conversationevent": ConversationEvent.objects.create(
            conversation=conversation, turn=1, sequence=1, event_type="user_message", data={"text": tenant}
        ),
        "conversations/chatmessage": ChatMessage.objects.create(
            conversation=conversation, message_id=f"m-{tenant}", tenant_id=tenant, role="user", text=tenant
        ),
        "conversations/usagelog": UsageLog.objects.create(tenant_id=tenant, kind="llm", name=f"model-{tenant}"),
        "datacatalog/generatedfile": GeneratedFile.objects.create(
            tenant_id=tenant, filename=f"{tenant}.pdf", path="/x"
        ),
        "conversations/notification": Notification.objects.create(tenant_id=tenant, kind=f"note-{tenant}"),
        "conversations/policyrule": PolicyRule.objects.create(
            name=f"rule-{tenant}", tenant_id=tenant, tool_name="plan", kind="max_calls_per_conversation", parameter="3"
        ),
        "registry/toolexecutionlog": ToolExecutionLog.objects.create(
            tool_name=f"tool_{tenant}", tenant_id=tenant, success=True, execution_ms=1.0
        ),
        "registry/mcpauditlog": MCPAuditLog.objects.create(
            action="connect", server_name=f"srv-{tenant}", tenant_id=tenant, actor="x"
        ),
        "registry/tenantmembership": TenantMembership.objects.get(user=owner),
        "tools/insightdefinition": InsightDefinition.objects.create(
            tenant_id=tenant, kind="schema", name=f"schema-{tenant}", version=1, definition={"type": "object"}
        ),
        "auth/user": owner,
    }


@pytest.fixture
def both(cast):
    return {TENANT: rows_of(TENANT, cast["member"]), OTHER_TENANT: rows_of(OTHER_TENANT, cast["other"])}


ADMIN_MODELS = [
    "conversations/conversation",
    "conversations/conversationevent",
    "conversations/chatmessage",
    "conversations/usagelog",
    "datacatalog/generatedfile",
    "conversations/notification",
    "conversations/policyrule",
    "registry/toolexecutionlog",
    "registry/mcpauditlog",
    "registry/tenantmembership",
    "tools/insightdefinition",
    "auth/user",
]


def change_page(model: str, row) -> str:
    return f"/admin/{model}/{row.pk}/change/"


@pytest.mark.parametrize("model", ADMIN_MODELS)
def test_staff_see_only_their_tenants_rows_in_the_admin(cast, both, model):
    staff = signed_in(cast["staff"])
    assert staff.get(change_page(model, both[TENANT][model])).status_code == 200
    # Another tenant's row is not found: the admin redirects to its index with "doesn't exist".
    response = staff.get(change_page(model, both[OTHER_TENANT][model]))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    listing = staff.get(f"/admin/{model}/")
    listed = {row.pk for row in listing.context["cl"].queryset}
    assert both[TENANT][model].pk in listed and both[OTHER_TENANT][model].pk not in listed
    assert OTHER_TENANT not in listing.content.decode()  # not in a row, nor in a tenant filter's choices


@pytest.mark.parametrize("model", ADMIN_MODELS)
def test_a_superuser_sees_every_tenants_rows_in_the_admin(cast, both, model):
    root = signed_in(cast["superuser"])
    for tenant in (TENANT, OTHER_TENANT):
        assert root.get(change_page(model, both[tenant][model])).status_code == 200


@pytest.mark.parametrize("who", ["member", "other"])
def test_plain_users_get_no_admin(cast, both, who):
    response = signed_in(cast[who]).get("/admin/conversations/conversation/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.parametrize("url", ["/admin/llm/modelconfig/", "/admin/registry/seedlog/"])
def test_platform_settings_are_for_superusers_only(cast, url):
    assert signed_in(cast["staff"]).get(url).status_code == 403
    assert signed_in(cast["superuser"]).get(url).status_code == 200


def test_staff_cannot_move_a_row_into_another_tenant(cast, both):
    staff = cast["staff"]
    staff.user_permissions.add(Permission.objects.get(codename="change_policyrule"))
    rule = both[TENANT]["conversations/policyrule"]
    response = signed_in(staff).post(
        change_page("conversations/policyrule", rule),
        {
            "name": "renamed",
            "tenant_id": OTHER_TENANT,
            "tool_name": "plan",
            "kind": rule.kind,
            "parameter": "3",
            "action": "warn",
            "message": "",
            "enabled": "on",
        },
    )
    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.tenant_id) == ("renamed", TENANT)


def test_the_telemetry_page_of_another_tenants_conversation_is_not_found_for_staff(cast, both):
    theirs = both[OTHER_TENANT]["conversations/conversation"]
    assert signed_in(cast["staff"]).get(f"/telemetry/conversations/{theirs.pk}/").status_code == 404
    assert signed_in(cast["superuser"]).get(f"/telemetry/conversations/{theirs.pk}/").status_code == 200
    mine = both[TENANT]["conversations/conversation"]
    assert signed_in(cast["staff"]).get(f"/telemetry/conversations/{mine.pk}/").status_code == 200


def test_telemetry_lists_only_the_staff_members_tenant(cast, both):
    page = signed_in(cast["staff"]).get("/telemetry/", {"tenant": OTHER_TENANT}).content.decode()
    assert f"tool_{OTHER_TENANT}" not in page and f"model-{OTHER_TENANT}" not in page
    page = signed_in(cast["staff"]).get("/telemetry/").content.decode()
    assert f"tool_{TENANT}" in page and f"tool_{OTHER_TENANT}" not in page and f"model-{OTHER_TENANT}" not in page
    everything = signed_in(cast["superuser"]).get("/telemetry/").content.decode()
    assert f"tool_{TENANT}" in everything and f"tool_{OTHER_TENANT}" in everything


@pytest.mark.parametrize("who", ["member", "other"])
def test_plain_users_get_no_telemetry_or_playground(cast, who):
    for url in ("/telemetry/", "/playground/"):
        assert signed_in(cast[who]).get(url).status_code == 302


def test_the_playground_runs_a_tool_only_for_the_staff_members_tenant(cast):
    staff = signed_in(cast["staff"])
    inputs = '{"query": "plan the steps"}'
    refused = staff.post("/playground/search_tools/", {"inputs": inputs, "tenant": OTHER_TENANT})
    assert refused.status_code == 403 and "your own tenant" in refused.content.decode()
    assert not ToolExecutionLog.objects.filter(tenant_id=OTHER_TENANT, tool_name="search_tools").exists()
    assert staff.post("/playground/search_tools/", {"inputs": inputs, "tenant": TENANT}).status_code == 200
    root = signed_in(cast["superuser"])
    assert root.post("/playground/search_tools/", {"inputs": inputs, "tenant": OTHER_TENANT}).status_code == 200
    assert ToolExecutionLog.objects.filter(tenant_id=OTHER_TENANT, tool_name="search_tools").exists()


@pytest.mark.django_db(transaction=True)  # the tool runs on a worker thread: it must see the committed cast
def test_query_telemetry_all_tenants_is_for_superusers_not_staff(cast, both, call):
    refused = call("query_telemetry", context={"user_id": str(cast["staff"].pk)}, all_tenants=True)
    assert refused.error and "superusers only" in refused.content
    plain = call("query_telemetry", context={"user_id": str(cast["member"].pk)}, all_tenants=True)
    assert plain.error
    result = call("query_telemetry", context={"user_id": str(cast["superuser"].pk)}, all_tenants=True)
    assert result.error is None and f"tool_{OTHER_TENANT}" in result.content

"""A person's list of conversations over REST: titles from the first message, the most
recently active first, search, rename, delete with undo; only ever one's own."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from conversations.listing import title_from
from conversations.models import ChatMessage, Conversation
from registry.models import TenantMembership
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def listed(api, query: str = "") -> list[str]:
    return [c["title"] for c in api.get(f"/api/conversations/{query}").json()["results"]]


def untitled(user) -> Conversation:
    return Conversation.objects.create(tenant_id=TENANT, user=user)


@pytest.fixture
def colleague_conversation():
    """A conversation of someone else in the same tenant."""
    bob = get_user_model().objects.create_user("bob", password="pw")
    TenantMembership.objects.create(user=bob, tenant_id=TENANT)
    return Conversation.objects.create(tenant_id=TENANT, user=bob, title="Bob's")


def test_the_first_message_names_an_untitled_conversation_and_later_ones_do_not(api, model, user):
    model([{"text": ["Sunny."]}, {"text": ["Still sunny."]}])
    conversation = untitled(user)
    api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "Weather in  Oslo\ntomorrow?"}, format="json")
    api.post(f"/api/conversations/{conversation.pk}/messages/", {"text": "And Bergen?"}, format="json")
    assert listed(api) == ["Weather in Oslo"]


def test_a_title_from_a_long_first_message_is_cut_short():
    title = title_from("word " * 40)
    assert len(title) == 60 and title.endswith("…")


def test_the_list_puts_the_conversation_with_the_latest_message_first(api, model, user):
    model([{"text": ["Hello."]}])
    older = Conversation.objects.create(tenant_id=TENANT, user=user, title="Older")
    Conversation.objects.create(tenant_id=TENANT, user=user, title="Newer")
    before = Conversation.objects.get(pk=older.pk).updated_at
    api.post(f"/api/conversations/{older.pk}/messages/", {"text": "Hi again"}, format="json")
    assert Conversation.objects.get(pk=older.pk).updated_at > before
    assert listed(api) == ["Older", "Newer"]


def test_search_finds_conversations_by_title_or_by_what_was_said(api, user):
    Conversation.objects.create(tenant_id=TENANT, user=user, title="Rain in Oslo")
    said = Conversation.objects.create(tenant_id=TENANT, user=user, title="Trip")
    ChatMessage.objects.create(
        conversation=said, message_id="m1", tenant_id=TENANT, role="user", text="Pack an UMBRELLA"
    )
    Conversation.objects.create(tenant_id=TENANT, user=user, title="Taxes")
    assert listed(api, "?search=oslo") == ["Rain in Oslo"]
    assert listed(api, "?search=umbrella") == ["Trip"]
    assert api.get(f"/api/conversations/?search={'x' * 201}").status_code == 400
    assert api.get("/api/conversations/?search=a%00b").status_code == 400


def test_search_never_finds_a_colleagues_conversation(api, user, colleague_conversation):
    assert listed(api, "?search=Bob") == []


def test_a_conversation_is_renamed_with_a_patch_and_a_blank_title_is_refused(api, conversation):
    url = f"/api/conversations/{conversation.pk}/"
    assert api.patch(url, {"title": "  Rainy days "}, format="json").json()["title"] == "Rainy days"
    assert api.patch(url, {"title": "   "}, format="json").status_code == 400
    assert api.patch(url, {"mode": "agentic"}, format="json").json()["mode"] == "chat"  # only the title changes
    assert Conversation.objects.get(pk=conversation.pk).title == "Rainy days"


def test_a_deleted_conversation_is_gone_until_its_owner_restores_it(api, conversation):
    url = f"/api/conversations/{conversation.pk}/"
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404
    assert api.get(f"{url}messages/").status_code == 404
    assert listed(api) == []
    restored = api.post(f"{url}restore/")
    assert restored.status_code == 200 and restored.json()["title"] == "Weather"
    assert listed(api) == ["Weather"]
    assert api.post(f"{url}restore/").status_code == 404  # nothing deleted to restore


def test_nobody_renames_deletes_or_restores_a_colleagues_conversation(api, colleague_conversation):
    url = f"/api/conversations/{colleague_conversation.pk}/"
    assert api.patch(url, {"title": "Mine now"}, format="json").status_code == 404
    assert api.delete(url).status_code == 404
    Conversation.objects.filter(pk=colleague_conversation.pk).update(deleted_at="2026-01-01T00:00:00Z")
    assert api.post(f"{url}restore/").status_code == 404
    assert Conversation.objects.get(pk=colleague_conversation.pk).title == "Bob's"

"""Who may open a conversation: its active owner, in the tenant the owner belongs to now."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from conversations.access import owned_conversation
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


def test_the_owner_gets_the_conversation_with_themselves_fresh_in_one_query(
    conversation, user, django_assert_num_queries
):
    get_user_model().objects.filter(pk=user.pk).update(is_staff=True)  # after the socket's user was loaded

    with django_assert_num_queries(1):
        found = owned_conversation(user, conversation.pk)
        owner = found.user

    assert found == conversation
    assert owner.is_staff is True


def test_another_user_of_the_same_tenant_gets_nothing(conversation):
    colleague = get_user_model().objects.create_user("bob")
    TenantMembership.objects.create(user=colleague, tenant_id=TENANT)
    assert owned_conversation(colleague, conversation.pk) is None


def test_an_owner_moved_to_another_tenant_gets_nothing(conversation, user):
    TenantMembership.objects.filter(user=user).update(tenant_id=OTHER_TENANT)
    assert owned_conversation(user, conversation.pk) is None


def test_an_owner_without_a_membership_gets_nothing(conversation, user):
    TenantMembership.objects.filter(user=user).delete()
    assert owned_conversation(user, conversation.pk) is None


def test_a_deactivated_owner_gets_nothing(conversation, user):
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    assert owned_conversation(user, conversation.pk) is None


def test_anonymous_callers_and_unknown_ids_get_nothing(conversation, user):
    assert owned_conversation(AnonymousUser(), conversation.pk) is None
    assert owned_conversation(None, conversation.pk) is None
    assert owned_conversation(user, "00000000000000000000000000000000") is None

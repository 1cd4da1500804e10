"""A turn's capabilities: Django's permissions and groups, read in one query."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group, Permission

from conversations.capabilities import capabilities_for

pytestmark = pytest.mark.django_db


def permission(codename: str) -> Permission:
    return Permission.objects.get(codename=codename)


def as_django_sees_it(user) -> frozenset[str]:
    """What ModelBackend grants, with groups and staff: the answer the single query must match."""
    names = set(user.get_all_permissions()) | {f"group:{g}" for g in user.groups.values_list("name", flat=True)}
    return frozenset(names | ({"staff"} if user.is_staff else set()))


@pytest.fixture
def analysts() -> Group:
    group = Group.objects.create(name="analysts")
    group.permissions.add(permission("view_tooldefinition"), permission("change_tooldefinition"))
    return group


@pytest.fixture
def cast(analysts):
    User = get_user_model()
    plain = User.objects.create_user("plain")
    direct = User.objects.create_user("direct")
    direct.user_permissions.add(permission("view_tooldefinition"))
    member = User.objects.create_user("member")
    member.groups.add(analysts, Group.objects.create(name="no-rights"))
    staff = User.objects.create_user("staff", is_staff=True)
    staff.groups.add(analysts)
    staff.user_permissions.add(permission("view_tooldefinition"))  # also granted by the group
    superuser = User.objects.create_superuser("root")
    inactive = User.objects.create_user("gone", is_active=False)
    inactive.user_permissions.add(permission("view_tooldefinition"))
    inactive.groups.add(analysts)
    return {"plain": plain, "direct": direct, "member": member, "staff": staff, "root": superuser, "gone": inactive}


def test_every_kind_of_user_gets_what_django_would_grant(cast) -> None:
    for name, user in cast.items():
        fresh = get_user_model().objects.get(pk=user.pk)  # no permission cache from set-up

        assert capabilities_for(fresh) == as_django_sees_it(get_user_model().objects.get(pk=user.pk)), name


def test_group_rights_and_names_arrive_together(cast) -> None:
    assert capabilities_for(cast["member"]) == {
        "registry.view_tooldefinition",
        "registry.change_tooldefinition",
        "group:analysts",
        "group:no-rights",
    }


def test_an_inactive_user_keeps_its_groups_but_no_permissions(cast) -> None:
    assert capabilities_for(cast["gone"]) == {"group:analysts"}


def test_a_superuser_has_every_permission(cast) -> None:
    assert len(capabilities_for(cast["root"])) == Permission.objects.count() + 1  # and "staff"


def test_one_query_answers_for_any_user(cast, django_assert_num_queries) -> None:
    for user in cast.values():
        with django_assert_num_queries(1):
            capabilities_for(user)


def test_nobody_signed_in_has_no_capabilities(django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        assert capabilities_for(None) == frozenset()
        assert capabilities_for(AnonymousUser()) == frozenset()


def test_with_another_backend_every_backend_is_asked(cast, settings) -> None:
    settings.AUTHENTICATION_BACKENDS = [
        "django.contrib.auth.backends.ModelBackend",
        "tests.conversations.test_capabilities.GrantsReports",
    ]

    assert "reports.view_all" in capabilities_for(cast["plain"])


class GrantsReports:
    """An extra authentication backend that grants one permission to everyone."""

    def authenticate(self, request, **credentials):
        return None

    def get_all_permissions(self, user_obj, obj=None):
        return {"reports.view_all"}

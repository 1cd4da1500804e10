"""A prepared update changes what its queryset's ``update`` would, composes its SQL once,
and refuses the updates it could not run as given."""

from datetime import datetime, timedelta

import pytest
from django.db import models
from django.utils import timezone

from conversations.models import Conversation, TurnRecord
from eunice.db.prepared import PreparedUpdate
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def titled_if_untitled(pk, now, title):
    return (
        Conversation.objects.filter(pk=pk),
        {
            "updated_at": now,
            "title": models.Case(models.When(title="", then=models.Value(title)), default=models.F("title")),
        },
    )


@pytest.fixture
def untitled(user):
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="")


def test_an_update_sets_its_values_and_expressions_on_the_rows_it_selects(conversation, untitled):
    update = PreparedUpdate(titled_if_untitled)
    now = timezone.now()
    assert update(untitled.pk, now, "Rain") == 1
    assert update(conversation.pk, now + timedelta(seconds=1), "Rain") == 1
    assert update("no such conversation", now, "Rain") == 0
    rows = {c.pk: (c.title, c.updated_at) for c in Conversation.objects.all()}
    assert rows[untitled.pk] == ("Rain", now)  # the datetime stored as the ORM stores it
    assert rows[conversation.pk] == ("Weather", now + timedelta(seconds=1))


def test_the_update_is_composed_once_and_runs_once_per_call(untitled, django_assert_num_queries):
    built = []

    def build(pk, now, title):
        built.append(pk)
        return titled_if_untitled(pk, now, title)

    update = PreparedUpdate(build)
    for n in range(3):
        with django_assert_num_queries(1):
            update(untitled.pk, timezone.now(), f"title {n}")
    assert len(built) == 1
    assert Conversation.objects.get(pk=untitled.pk).title == "title 0"


def test_integer_values_take_their_place_too(conversation):
    for turn in (1, 2, 3):
        TurnRecord.objects.create(conversation=conversation, turn=turn, status="finished")
    update = PreparedUpdate(
        lambda c, turn, why: (
            TurnRecord.objects.filter(conversation_id=c, turn__gte=turn),
            {"status": "interrupted", "interrupted_reason": why},
        )
    )
    assert update(conversation.pk, 2, "later") == 2
    assert update(conversation.pk, 3, "last") == 1
    rows = TurnRecord.objects.filter(conversation=conversation).order_by("turn")
    assert list(rows.values_list("status", "interrupted_reason")) == [
        ("finished", ""),
        ("interrupted", "later"),
        ("interrupted", "last"),
    ]


def test_a_naive_datetime_is_set_through_the_orm(untitled, django_assert_num_queries, settings):
    settings.USE_TZ = False
    built = []

    def build(pk, now, title):
        built.append(pk)
        return titled_if_untitled(pk, now, title)

    update = PreparedUpdate(build)
    naive = datetime(2026, 12, 5, 12, 0, 0)
    with django_assert_num_queries(1):
        assert update(untitled.pk, naive, "Rain") == 1
    assert Conversation.objects.get(pk=untitled.pk).updated_at == naive
    assert len(built) == 1  # built for the ORM, never composed


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda c: (Conversation.objects.filter(title__startswith=c), {"title": "x"}),
            id="a value its lookup changes",
        ),
        pytest.param(lambda c: (Conversation.objects.all(), {"title": "x"}), id="a value not used"),
        pytest.param(
            lambda c, now: (Conversation.objects.filter(pk=c), {"updated_at": now - timedelta(days=1)}),
            id="a datetime computed on",
        ),
    ],
)
def test_a_value_that_is_not_a_parameter_as_given_is_refused(build):
    values = ["x", timezone.now()][: build.__code__.co_argcount]
    with pytest.raises(ValueError, match="as given"):
        PreparedUpdate(build)(*values)

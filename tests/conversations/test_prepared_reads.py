"""A prepared read gives what its queryset gives, composes its SQL once, and refuses
the querysets it could not run as given."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import ChatMessage, Conversation, TurnRecord
from eunice.db.prepared import Prepared
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db


def messages(conversation_id):
    return ChatMessage.objects.filter(conversation_id=conversation_id).order_by("-id")


@pytest.fixture
def two_conversations(conversation, user):
    other = Conversation.objects.create(tenant_id=TENANT, user=user, title="other")
    for owner, count in ((conversation, 3), (other, 2)):
        for n in range(count):
            ChatMessage.objects.create(
                conversation=owner,
                message_id=f"{owner.pk}-{n}",
                tenant_id=TENANT,
                role="assistant",
                text=f"said {n}",
                structured_content=[{"role": "assistant", "content": [{"type": "text", "text": f"é {n}"}]}],
            )
    return conversation, other


def test_a_values_list_read_gives_the_querysets_rows_for_each_value(two_conversations):
    read = Prepared(lambda c: messages(c).values_list("message_id", "structured_content", "created_at"))
    for conversation in two_conversations:
        expected = list(messages(conversation.pk).values_list("message_id", "structured_content", "created_at"))
        assert read(conversation.pk) == expected  # JSON and datetimes converted as the ORM does
    assert read("no such conversation") == []


def test_a_flat_read_gives_values_and_an_instance_read_gives_instances(two_conversations):
    conversation, _ = two_conversations
    flat = Prepared(lambda c: messages(c).values_list("text", flat=True))
    assert flat(conversation.pk) == ["said 2", "said 1", "said 0"]

    read = Prepared(lambda c: messages(c).defer("cards"))
    rows, expected = read(conversation.pk), list(messages(conversation.pk).defer("cards"))
    assert [(m.pk, m.text, m.structured_content, m.created_at) for m in rows] == [
        (m.pk, m.text, m.structured_content, m.created_at) for m in expected
    ]
    assert all(m.get_deferred_fields() == {"cards"} and not m._state.adding for m in rows)
    rows[0].text = "changed"
    rows[0].save(update_fields=["text"])  # an instance saves as a fetched one does
    assert ChatMessage.objects.get(pk=rows[0].pk).text == "changed"


def test_the_query_is_composed_once_and_runs_once_per_read(two_conversations, django_assert_num_queries):
    built = []

    def build(conversation_id):
        built.append(conversation_id)
        return messages(conversation_id).values_list("message_id", flat=True)

    read = Prepared(build)
    conversation, other = two_conversations
    for _ in range(2):
        with django_assert_num_queries(1):
            assert len(read(conversation.pk)) == 3
        with django_assert_num_queries(1):
            assert len(read(other.pk)) == 2
    assert len(built) == 1


def test_integer_values_take_their_place_too(conversation):
    for turn in (1, 2, 3):
        TurnRecord.objects.create(conversation=conversation, turn=turn, status="finished")
    read = Prepared(
        lambda c, turn: (
            TurnRecord.objects.filter(conversation_id=c, turn__gte=turn).order_by("turn").values_list("turn", flat=True)
        )
    )
    assert read(conversation.pk, 2) == [2, 3]
    assert read(conversation.pk, 1) == [1, 2, 3]
    assert read(conversation.pk, 4) == []


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda c: ChatMessage.objects.filter(text__startswith=c), id="a value its lookup changes"),
        pytest.param(lambda c: ChatMessage.objects.all(), id="a value not used"),
        pytest.param(lambda c, turn: TurnRecord.objects.filter(turn__gte=turn - 1), id="a value computed on"),
    ],
)
def test_a_value_that_is_not_a_parameter_as_given_is_refused(build):
    with pytest.raises(ValueError, match="exact lookup"):
        Prepared(build)(*(["x", 1][: build.__code__.co_argcount]))


def test_reads_it_cannot_give_as_the_orm_would_are_refused():
    with pytest.raises(TypeError, match="plain model instances"):
        Prepared(lambda c: ChatMessage.objects.filter(conversation_id=c).select_related("conversation"))("x")


def test_a_value_of_another_type_is_read_through_the_orm(two_conversations, django_assert_num_queries):
    built = []

    def build(since):
        built.append(since)
        return ChatMessage.objects.filter(created_at__gte=since).order_by("id").values_list("message_id", flat=True)

    read = Prepared(build)
    for since, count in ((timezone.now() - timedelta(days=1), 5), (timezone.now() + timedelta(days=1), 0)):
        with django_assert_num_queries(1):
            rows = read(since)
        assert rows == list(build(since)) and len(rows) == count
    assert len(built) == 4  # each read built its queryset (and the test one more each)

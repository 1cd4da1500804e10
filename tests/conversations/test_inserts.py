"""insert_rows writes what save() would, with one statement composed once."""

import pytest
from django.utils import timezone

from conversations.inserts import MAX_ROWS_PER_STATEMENT, insert_rows
from conversations.models import ChatMessage, Conversation, UsageLog
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db

STORED = (
    "conversation_id",
    "tenant_id",
    "role",
    "text",
    "structured_content",
    "cards",
    "cost_usd",
)  # all but message_id


def message(conversation, message_id, **fields):
    return ChatMessage(conversation=conversation, message_id=message_id, tenant_id=TENANT, role="assistant", **fields)


def test_a_row_reads_back_as_the_orm_would_have_stored_it(conversation):
    content = [{"role": "assistant", "content": [{"type": "text", "text": "é ✓"}]}]
    before = timezone.now()
    insert_rows([message(conversation, "raw", text="hi", structured_content=content, cards=[{"k": 1}], cost_usd=0.25)])
    message(conversation, "orm", text="hi", structured_content=content, cards=[{"k": 1}], cost_usd=0.25).save()

    raw, orm = (ChatMessage.objects.get(message_id=m) for m in ("raw", "orm"))
    assert [getattr(raw, f) for f in STORED] == [getattr(orm, f) for f in STORED]
    assert before <= raw.created_at <= orm.created_at  # auto_now_add filled, as save() does


def test_many_rows_are_written_in_order_with_one_query(conversation, django_assert_num_queries):
    rows = [
        UsageLog(tenant_id=TENANT, conversation=conversation, kind="llm", name=f"m{n}", input_tokens=n)
        for n in range(5)
    ]
    with django_assert_num_queries(1):
        insert_rows(rows)
    assert list(UsageLog.objects.order_by("id").values_list("name", "input_tokens")) == [(f"m{n}", n) for n in range(5)]


def test_rows_past_one_statements_limit_go_in_several_statements_still_in_order(
    conversation, django_assert_num_queries
):
    count = MAX_ROWS_PER_STATEMENT * 2 + 1
    rows = [
        UsageLog(tenant_id=TENANT, conversation=conversation, kind="llm", name=f"m{n}", input_tokens=n)
        for n in range(count)
    ]
    with django_assert_num_queries(3):
        insert_rows(rows)
    assert list(UsageLog.objects.order_by("id").values_list("input_tokens", flat=True)) == list(range(count))


def test_a_primary_key_the_model_sets_itself_is_written(user):
    conversation = Conversation(tenant_id=TENANT, user=user, title="kept id")
    insert_rows([conversation])
    assert Conversation.objects.get(pk=conversation.pk).title == "kept id"


def test_nothing_to_write_runs_no_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        insert_rows([])

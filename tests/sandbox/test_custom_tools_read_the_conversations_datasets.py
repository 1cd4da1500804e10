"""Class 7: a custom tool in a conversation gets its datasets — ``df`` (the default
dataset) and ``datasets`` by name — and only when its caller may read them.

Each test uploads CSV files into a real conversation's catalog and calls an approved
tool through execute_tool with the context the conversation runtime builds.
"""

from __future__ import annotations

import pytest

from conversations.models import Conversation
from conversations.runtime import start_run
from datacatalog.store import ConversationCatalog
from datacatalog.uploads import upload_dataset
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db

SALES_CSV = (
    b"region,units,price,day\n"
    b"north,10,2.5,2024-01-01\nsouth,4,4.0,2024-01-03\nnorth,7,2.5,2024-02-01\n"
    b"east,3,10.0,2024-02-10\nsouth,8,4.0,2024-03-01\n"
)
TARGETS_CSV = b"region,target\nnorth,15\nsouth,10\neast,5\n"


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw")


@pytest.fixture
def conversation(owner):
    conversation = Conversation.objects.create(id="conv-data", tenant_id=TENANT, user=owner)
    books = ConversationCatalog(TENANT, conversation.id)
    upload_dataset(books, "targets.csv", TARGETS_CSV)
    upload_dataset(books, "sales.csv", SALES_CSV)  # the newest: the default dataset
    return conversation


def in_conversation(registry, conversation, user, name, **inputs):
    """Call ``name`` with the context the conversation runtime gives a tool."""
    runtime = start_run(conversation, user=user, turn=1)
    return registry.execute_tool(name, inputs, runtime.tool_context("toolu_1", name, None))


def test_df_is_the_conversations_default_dataset(approved_tool, registry, conversation, owner):
    approved_tool("by_region", "result = df.groupby('region')['units'].sum()")
    result = in_conversation(registry, conversation, owner, "by_region")
    assert result.error is None, result.error
    assert "north    17" in text(result)  # the old runtime passed no df: 'NoneType' has no groupby


def test_datasets_holds_every_dataset_of_the_conversation_by_name(approved_tool, registry, conversation, owner):
    code = (
        "totals = datasets['sales'].groupby('region', as_index=False)['units'].sum()\n"
        "both = totals.merge(datasets['targets'], on='region')\n"
        "both['met'] = both['units'] >= both['target']\n"
        "met = both.set_index('region')['met'].to_dict()\n"
        "result = {'message': ', '.join(sorted(datasets)) + ' | ' + str(met)}\n"
    )
    approved_tool("targets_met", code)
    result = in_conversation(registry, conversation, owner, "targets_met")
    assert result.error is None, result.error
    assert "sales, targets" in result.content
    assert "'north': True" in result.content and "'east': False" in result.content


def test_the_caller_context_of_call_tool_reads_the_same_conversation(approved_tool, call, conversation, owner):
    # What `manage.py call_tool --conversation` and call_tool from another tool pass: no catalog.
    approved_tool("rows", "result = len(df)")
    result = call("rows", context={"conversation_id": conversation.id, "user_id": str(owner.pk)})
    assert text(result).strip() == "5"


def test_another_user_of_the_tenant_does_not_get_the_owners_datasets(
    approved_tool, call, conversation, django_user_model
):
    stranger = django_user_model.objects.create_user("stranger", password="pw")
    approved_tool("peek", "result = 'df is ' + ('none' if df is None else 'given') + ', ' + str(len(datasets))")
    result = call("peek", context={"conversation_id": conversation.id, "user_id": str(stranger.pk)})
    assert text(result).strip() == "df is none, 0"


def test_staff_of_the_tenant_may_read_them(approved_tool, call, conversation, staff):
    approved_tool("rows", "result = len(df)")
    assert text(call("rows", context={"conversation_id": conversation.id, "user_id": str(staff.pk)})).strip() == "5"


def test_another_tenant_never_reads_them(approved_tool, call, conversation, owner):
    approved_tool("peek", "result = 'none' if df is None else 'leaked'", tenant="*")
    result = call("peek", tenant=OTHER_TENANT, context={"conversation_id": conversation.id, "user_id": str(owner.pk)})
    assert "leaked" not in result.content


def test_a_dataset_over_the_budget_is_refused_by_name_and_limit(approved_tool, registry, conversation, owner, settings):
    settings.SANDBOX = {**settings.SANDBOX, "DATASET_MB": 1}
    big = b"n\n" + b"".join(b"%d\n" % i for i in range(300_000))  # 2.4 MB as int64
    upload_dataset(ConversationCatalog(TENANT, conversation.id), "big.csv", big)
    approved_tool("total", "result = df['n'].sum()")
    result = in_conversation(registry, conversation, owner, "total")
    assert result.error is not None
    assert "'big'" in result.error and "EUNICE_SANDBOX_DATASET_MB" in result.error
    approved_tool("small", "result = datasets['sales']['units'].sum()")
    assert text(in_conversation(registry, conversation, owner, "small")).strip() == "32"


def test_changes_to_df_stay_in_the_run(approved_tool, registry, conversation, owner):
    approved_tool("wipe", "df['units'] = 0\nresult = df['units'].sum()")
    assert text(in_conversation(registry, conversation, owner, "wipe")).strip() == "0"
    approved_tool("total", "result = df['units'].sum()")
    assert text(in_conversation(registry, conversation, owner, "total")).strip() == "32"

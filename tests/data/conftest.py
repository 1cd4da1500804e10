"""Data-tool helpers: a conversation per tenant, files in a temporary directory, uploads."""

from __future__ import annotations

import pytest

from conversations.catalog import ConversationCatalog
from conversations.catalog.uploads import upload_dataset
from conversations.models import Conversation
from tests.conftest import OTHER_TENANT, TENANT

SALES_CSV = (
    b"region,product,units,price,day,lat,lon\n"
    b"north,a,10,2.5,2024-01-01,59.91,10.75\n"
    b"south,b,4,4.0,2024-01-03,58.97,5.73\n"
    b"north,a,7,2.5,2024-02-01,63.43,10.39\n"
    b"east,c,3,10.0,2024-02-10,59.13,11.38\n"
    b"south,c,8,,2024-03-01,58.15,8.00\n"
)


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path):
    settings.FILES_DIR = tmp_path / "files"
    settings.EUNICE_FILES_DIR = settings.FILES_DIR  # the tools' uploads and generated files, read from the same variable
    return settings.FILES_DIR


@pytest.fixture
def conversation(transactional_db):
    return Conversation.objects.create(id="conv-acme", tenant_id=TENANT)


@pytest.fixture
def other_conversation(transactional_db):
    return Conversation.objects.create(id="conv-globex", tenant_id=OTHER_TENANT)


@pytest.fixture
def sales(conversation):
    """The acme conversation with sales.csv uploaded as dataset `sales`."""
    books = ConversationCatalog(TENANT, conversation.id)
    upload_dataset(books, "sales.csv", SALES_CSV)
    return books


@pytest.fixture
def in_conversation(registry, conversation):
    """call(name, **inputs) inside the acme conversation."""

    def run(tool, /, tenant=TENANT, context=None, **inputs):
        ctx = {"conversation_id": conversation.id, **(context or {})}
        return registry.execute_tool(tool, inputs, {"tenant_id": tenant, "user_id": "u1", **ctx})

    return run

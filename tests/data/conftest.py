"""Data-tool helpers: a conversation per tenant, files in a temporary directory, uploads,
a scratch PostgreSQL database with a role of its own, a staff member who may register datasources."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from conversations.models import Conversation
from datacatalog.store import ConversationCatalog
from datacatalog.uploads import upload_dataset
from registry.context import ToolContext
from registry.models import TenantMembership
from tests.conftest import OTHER_TENANT, TENANT

SALES_CSV = (
    b"region,product,units,price,day,lat,lon\n"
    b"north,a,10,2.5,2024-01-01,59.91,10.75\n"
    b"south,b,4,4.0,2024-01-03,58.97,5.73\n"
    b"north,a,7,2.5,2024-02-01,63.43,10.39\n"
    b"east,c,3,10.0,2024-02-10,59.13,11.38\n"
    b"south,c,8,,2024-03-01,58.15,8.00\n"
)


ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def client_for(django_user_model, username, tenant):
    """A REST client signed in as a new member of ``tenant``."""
    user = django_user_model.objects.create_user(username)
    TenantMembership.objects.create(user=user, tenant_id=tenant)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture(autouse=True)
def files_dir(settings, tmp_path):
    settings.EUNICE_FILES_DIR = tmp_path / "files"
    return settings.EUNICE_FILES_DIR


@pytest.fixture
def conversation(transactional_db):
    return Conversation.objects.create(id="conv-acme", tenant_id=TENANT)


@pytest.fixture
def ann(django_user_model, conversation):
    """Ann, whose conversation ``conversation`` is."""
    client = client_for(django_user_model, "ann", TENANT)
    conversation.user = django_user_model.objects.get(username="ann")
    conversation.save(update_fields=["user"])
    return client


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
        return registry.execute_tool(tool, inputs, ToolContext(**{"tenant_id": tenant, "user_id": "u1", **ctx}))

    return run


@pytest.fixture
def scratch_postgres():
    """A database and a login role (not a superuser) created for the test and dropped after it.

    Not the app's database: a database of its own on the same server, with one
    table the role may read and (to show the session, not a grant, refuses
    writes) write.
    """
    name = f"eunice_ds_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        admin.execute(f'CREATE ROLE "{name}" LOGIN NOSUPERUSER')
    try:
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{name}", autocommit=True) as db:
            db.execute("CREATE TABLE customers (id int, full_name text, country text)")
            db.execute("INSERT INTO customers VALUES (1, 'Ada', 'NO'), (2, 'Linus', 'FI'), (3, 'Grace', 'US')")
            db.execute(f'GRANT ALL ON customers TO "{name}"')
        yield name
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{name}"')


@pytest.fixture
def staff_context(django_user_model):
    user = django_user_model.objects.create_user("boss", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["add_datasource", "change_datasource"]))
    return {"user_id": str(user.pk)}

"""The data catalog's models moved from the conversations app to datacatalog: a database
migrated before the move keeps its tables, its rows, their links to conversations and
users, and the permissions granted on the models."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from conversations.models import Conversation
from datacatalog.models import CatalogDataset, DataSource, GeneratedFile

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_THE_MOVE = [("conversations", "0007_working_set_used_at"), ("datacatalog", None)]
MOVED = ("catalogdataset", "generatedfile", "datasource")


def migrate(targets: list) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets if targets else executor.loader.graph.leaf_nodes())
    return executor


def old_models() -> tuple:
    executor = migrate(BEFORE_THE_MOVE)
    apps = executor.loader.project_state(BEFORE_THE_MOVE[:1]).apps
    return tuple(
        apps.get_model("conversations", name)
        for name in ("Conversation", "CatalogDataset", "GeneratedFile", "DataSource")
    )


def test_rows_written_before_the_move_are_read_after_it_with_their_links():
    conversation, dataset, generated, source = old_models()
    user = get_user_model().objects.create_user("ada")
    chat = conversation.objects.create(id="c1", tenant_id="acme", user_id=user.pk)
    dataset.objects.create(
        tenant_id="acme", conversation=chat, name="sales", path="/x.parquet", rows=3, source="upload"
    )
    generated.objects.create(tenant_id="acme", conversation=chat, user_id=user.pk, filename="a.csv", path="/a.csv")
    source.objects.create(tenant_id="acme", name="warehouse", kind="postgres", location={"host": "db"}, secret="tok")
    migrate([])
    assert list(CatalogDataset.objects.values_list("name", "rows", "conversation__user__username")) == [
        ("sales", 3, "ada")
    ]
    assert list(GeneratedFile.objects.values_list("filename", "user__username", "conversation_id")) == [
        ("a.csv", "ada", "c1")
    ]
    assert list(DataSource.objects.values_list("name", "location", "secret")) == [("warehouse", {"host": "db"}, "tok")]
    Conversation.objects.get(pk="c1").delete()  # the foreign keys still act as before the move
    assert not CatalogDataset.objects.exists()
    assert GeneratedFile.objects.get().conversation_id is None


def test_a_permission_granted_on_an_old_model_applies_to_the_moved_one():
    migrate(BEFORE_THE_MOVE)
    ContentType.objects.clear_cache()
    ContentType.objects.filter(app_label="datacatalog").delete()
    operators = Group.objects.create(name="operators")
    old_types = {}
    for model in MOVED:
        old_types[model], _ = ContentType.objects.get_or_create(app_label="conversations", model=model)
        permission, _ = Permission.objects.get_or_create(
            content_type=old_types[model], codename=f"view_{model}", defaults={"name": f"Can view {model}"}
        )
        operators.permissions.add(permission)
    migrate([])
    ContentType.objects.clear_cache()
    for model in (CatalogDataset, GeneratedFile, DataSource):
        moved = ContentType.objects.get_for_model(model)
        assert moved.pk == old_types[moved.model].pk and moved.app_label == "datacatalog"
    assert sorted(operators.permissions.values_list("content_type__app_label", "codename")) == [
        ("datacatalog", f"view_{model}") for model in sorted(MOVED)
    ]
    assert not ContentType.objects.filter(app_label="conversations", model__in=MOVED).exists()

"""ModelConfig moved from the registry app to llm: a database migrated before the move
keeps its table, its rows and the permissions granted on the model."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from llm.models import ModelConfig

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_THE_MOVE = [("registry", "0008_pending_approvals"), ("llm", None)]


def migrate(targets: list) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets if targets else executor.loader.graph.leaf_nodes())
    return executor


def test_a_row_written_before_the_move_is_read_after_it():
    executor = migrate(BEFORE_THE_MOVE)
    old = executor.loader.project_state(BEFORE_THE_MOVE[:1]).apps.get_model("registry", "ModelConfig")
    row = old.objects.create(
        role="chat",
        provider="anthropic",
        model="claude-x",
        max_output_tokens=777,
        input_price_per_mtok="3.0000",
        output_price_per_mtok="15.0000",
        capabilities={"web_search": True},
    )
    migrate([])
    moved = ModelConfig.objects.get(pk=row.pk)
    assert (moved.role, moved.provider, moved.model, moved.max_output_tokens) == ("chat", "anthropic", "claude-x", 777)
    assert (str(moved.input_price_per_mtok), str(moved.output_price_per_mtok)) == ("3.0000", "15.0000")
    assert moved.capabilities == {"web_search": True}


def test_a_permission_granted_on_the_old_model_applies_to_the_moved_one():
    migrate(BEFORE_THE_MOVE)
    ContentType.objects.clear_cache()
    ContentType.objects.filter(app_label="llm", model="modelconfig").delete()
    old_type, _ = ContentType.objects.get_or_create(app_label="registry", model="modelconfig")
    change, _ = Permission.objects.get_or_create(
        content_type=old_type, codename="change_modelconfig", defaults={"name": "Can change model config"}
    )
    operators = Group.objects.create(name="operators")
    operators.permissions.add(change)
    migrate([])
    ContentType.objects.clear_cache()
    moved_type = ContentType.objects.get_for_model(ModelConfig)
    assert moved_type.pk == old_type.pk and moved_type.app_label == "llm"
    assert list(operators.permissions.values_list("content_type__app_label", "codename")) == [
        ("llm", "change_modelconfig")
    ]
    assert not ContentType.objects.filter(app_label="registry", model="modelconfig").exists()

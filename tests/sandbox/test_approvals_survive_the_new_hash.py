"""Migration 0006: the hash now covers tenant and dependencies; valid approvals carry over, void ones stay void."""

import importlib

import pytest
from django.apps import apps

from registry.custom_tools import approve_custom_tool, register_custom_tool
from registry.models import ToolDefinition

pytestmark = pytest.mark.django_db

migration = importlib.import_module("registry.migrations.0006_review_scope")


def approved_before_the_migration(name: str, staff) -> ToolDefinition:
    """An approved tool whose hashes are what the previous code computed."""
    tool = register_custom_tool(
        name=name,
        code="result = 40 + 2",
        description="Answers.",
        tenant_id="acme",
        input_schema={"type": "object", "properties": {}},
    )
    tool = approve_custom_tool(tool, acting_user=staff)
    old = migration._hash(tool, migration.OLD_FIELDS)
    ToolDefinition.objects.filter(pk=tool.pk).update(definition_hash=old, approved_hash=old)
    return tool


def test_a_valid_approval_is_carried_over_and_the_tool_still_runs(staff, custom_tools_on, call):
    tool = approved_before_the_migration("answer", staff)
    migration.forwards(apps, None)
    tool.refresh_from_db()
    assert tool.approved_hash == tool.definition_hash == tool.compute_definition_hash()
    assert call("answer").error is None


def test_an_approval_already_void_stays_void(staff, custom_tools_on, call):
    tool = approved_before_the_migration("answer", staff)
    ToolDefinition.objects.filter(pk=tool.pk).update(implementation="result = 'changed after approval'")
    migration.forwards(apps, None)
    tool.refresh_from_db()
    assert tool.definition_hash == tool.compute_definition_hash() != tool.approved_hash
    assert "awaits review" in call("answer").content


def test_going_back_restores_the_old_hashes(staff, custom_tools_on):
    tool = approved_before_the_migration("answer", staff)
    migration.forwards(apps, None)
    migration.backwards(apps, None)
    tool.refresh_from_db()
    assert tool.approved_hash == tool.definition_hash == migration._hash(tool, migration.OLD_FIELDS)

import pytest
from django.core.management import call_command

from registry.models import ToolDefinition, ToolStatus, ToolType
from registry.seeding import seed_system_tools

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_table():
    """These tests seed synthetic catalogs, so they start from no rows at all."""
    ToolDefinition.objects.all().delete()


def entry(name, **overrides):
    base = {
        "name": name,
        "description": f"{name} does things.",
        "input_schema": {"type": "object", "properties": {}},
        "category": "utility",
        "handler_path": f"tools.utility.{name}",
        "status_message": "Working",
    }
    return {**base, **overrides}


def test_first_seed_creates_approved_system_rows():
    report = seed_system_tools([entry("alpha")])
    row = ToolDefinition.objects.get(name="alpha")
    assert report.created == ["alpha"]
    assert (row.tool_type, row.status, row.implementation) == ("system", "approved", "system:alpha")
    assert row.definition_hash


def test_a_second_seed_creates_and_updates_nothing():
    seed_system_tools([entry("alpha")])
    report = seed_system_tools([entry("alpha")])
    assert report.line().startswith("created 0, updated 0, unchanged 1")


def test_seeding_refreshes_catalog_columns_and_bumps_the_version():
    seed_system_tools([entry("alpha")])
    report = seed_system_tools([entry("alpha", category="analysis", status_message="Crunching")])
    row = ToolDefinition.objects.get(name="alpha")
    assert report.updated == ["alpha"]
    assert (row.category, row.status_message, row.version) == ("analysis", "Crunching", 2)


def test_seeding_never_overwrites_status_or_tool_type():
    seed_system_tools([entry("alpha")])
    ToolDefinition.objects.filter(name="alpha").update(status=ToolStatus.REJECTED, enabled=False)
    seed_system_tools([entry("alpha", description="Changed.")])
    row = ToolDefinition.objects.get(name="alpha")
    assert (row.status, row.enabled, row.tool_type) == ("rejected", False, "system")


def test_a_changed_description_clears_the_stored_embedding():
    seed_system_tools([entry("alpha")])
    ToolDefinition.objects.filter(name="alpha").update(embedding=b"\x00" * 8, embedding_model="m")
    seed_system_tools([entry("alpha", description="Now does other things.")])
    row = ToolDefinition.objects.get(name="alpha")
    assert row.embedding is None and row.embedding_model == ""


def test_an_unchanged_description_keeps_the_stored_embedding():
    seed_system_tools([entry("alpha")])
    ToolDefinition.objects.filter(name="alpha").update(embedding=b"\x01" * 8, embedding_model="m")
    seed_system_tools([entry("alpha", category="other")])
    assert bytes(ToolDefinition.objects.get(name="alpha").embedding) == b"\x01" * 8


def test_only_retired_tools_are_soft_deleted():
    seed_system_tools([entry("alpha"), entry("beta")])
    report = seed_system_tools([entry("alpha")], retired=["beta"])
    assert report.retired == ["beta"]
    assert ToolDefinition.objects.get(name="beta").deleted_at is not None
    assert ToolDefinition.objects.get(name="alpha").deleted_at is None


def test_a_live_row_the_code_does_not_know_is_reported_and_never_deleted(caplog):
    seed_system_tools([entry("alpha"), entry("legacy")])
    report = seed_system_tools([entry("alpha")])
    assert report.unknown == ["legacy"]
    assert ToolDefinition.objects.get(name="legacy").deleted_at is None
    assert "legacy" in caplog.text


def test_a_retired_tool_that_returns_to_the_catalog_is_revived():
    seed_system_tools([entry("alpha")], retired=[])
    seed_system_tools([], retired=["alpha"])
    report = seed_system_tools([entry("alpha")])
    assert report.updated == ["alpha"]
    assert ToolDefinition.objects.get(name="alpha").deleted_at is None


def test_a_catalog_name_taken_by_a_custom_tool_is_not_overwritten(caplog):
    ToolDefinition.objects.create(name="alpha", description="mine", tool_type=ToolType.CUSTOM, category="custom")
    report = seed_system_tools([entry("alpha")])
    assert report.conflicts == ["alpha"]
    assert ToolDefinition.objects.get(name="alpha").tool_type == "custom"


def test_the_seed_command_prints_the_report_line_and_a_rerun_changes_nothing(capsys):
    from tools.catalog import system_tools

    call_command("seed_tools")
    first = capsys.readouterr().out.strip()
    call_command("seed_tools")
    second = capsys.readouterr().out.strip()
    count = len(system_tools())
    assert first == f"created {count}, updated 0, unchanged 0, retired 0, unknown 0"
    assert second == f"created 0, updated 0, unchanged {count}, retired 0, unknown 0"

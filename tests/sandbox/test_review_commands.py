"""create_custom_tool → review_tool → call_tool from the command line."""

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def cli(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_a_tool_created_reviewed_and_called_from_the_cli(tmp_path, staff, custom_tools_on):
    source = tmp_path / "tool.py"
    source.write_text("result = inputs['n'] + 1")
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}}'
    assert "testing" in cli(
        "create_custom_tool",
        "plus_one",
        "--code-file",
        str(source),
        "--schema",
        schema,
        "--description",
        "Adds one.",
        "--tenant",
        "acme",
    )
    assert "approved" in cli("review_tool", "plus_one", "--approve", "--as", "reviewer")
    assert cli("call_tool", "plus_one", "--input", '{"n": 41}', "--tenant", "acme").strip().endswith("42")


def test_review_needs_staff(tmp_path, django_user_model, custom_tools_on):
    django_user_model.objects.create_user("plain")
    source = tmp_path / "tool.py"
    source.write_text("result = 1")
    cli("create_custom_tool", "one", "--code-file", str(source), "--description", "One.")
    with pytest.raises(CommandError, match="only active staff"):
        cli("review_tool", "one", "--approve", "--as", "plain")


def test_a_rejection_from_the_cli_needs_a_reason(tmp_path, staff):
    source = tmp_path / "tool.py"
    source.write_text("result = 1")
    cli("create_custom_tool", "two", "--code-file", str(source), "--description", "Two.")
    with pytest.raises(CommandError, match="needs a reason"):
        cli("review_tool", "two", "--reject", "--as", "reviewer")
    assert "rejected" in cli("review_tool", "two", "--reject", "--reason", "no", "--as", "reviewer")

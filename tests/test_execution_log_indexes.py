"""The execution log's indexes: each written on every insert, so none that another covers."""

import pytest
from django.db import connection

from registry.models import ToolExecutionLog

pytestmark = pytest.mark.django_db


def _indexes() -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, ToolExecutionLog._meta.db_table)
    # (On PostgreSQL a column's ``_like`` twin, which db_index adds, counts too: it has the same columns.)
    return {
        name: found["columns"] for name, found in constraints.items() if found["index"] and not found["primary_key"]
    }


def test_no_index_of_the_log_is_the_leading_columns_of_another():
    indexes = _indexes()
    covered = [
        (name, other)
        for name, columns in indexes.items()
        for other, wider in indexes.items()
        if other != name and wider[: len(columns)] == columns
    ]
    assert covered == []


def test_a_look_up_by_tool_takes_the_tool_and_time_index():
    rows = ToolExecutionLog.objects.filter(tool_name="search_tools").order_by("-created_at")[:50]
    assert "log_tool_time" in rows.explain()

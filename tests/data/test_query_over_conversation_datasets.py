"""query and query_frames: read-only SQL over the conversation's datasets."""

from __future__ import annotations

import pytest

from datacatalog.store import ConversationCatalog
from registry.context import ToolContext
from tests.conftest import OTHER_TENANT, TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_select_returns_rows_with_a_measured_schema(sales, in_conversation):
    result = in_conversation("query", sql="SELECT region, sum(units) AS units FROM sales GROUP BY region ORDER BY 1")
    assert result.error is None, result.content
    assert "3 rows" in result.content and "schema: region:" in result.content
    assert "north" in text(result)


def test_a_write_is_refused_by_the_parser_not_by_string_matching(sales, in_conversation):
    result = in_conversation("query", sql="INSERT INTO sales VALUES ('x','y',1,1,'2024-01-01',0,0)")
    assert result.content.startswith("⚠ schema hint:") and "only SELECT" in result.content


def test_file_access_from_sql_is_refused(sales, in_conversation):
    result = in_conversation("query", sql="SELECT * FROM read_csv('/etc/passwd')")
    assert result.content.startswith("⚠ schema hint:")
    assert "root:" not in result.content


def test_an_unknown_column_is_a_schema_hint_with_real_columns(sales, in_conversation):
    result = in_conversation("query", sql="SELECT regoin FROM sales")
    assert result.content.startswith("⚠ schema hint:") and "sales.region" in result.content


def test_an_unknown_table_names_the_closest_dataset(sales, in_conversation):
    result = in_conversation("query", sql="SELECT * FROM sale")
    assert result.content.startswith("⚠ schema hint:") and "sales" in result.content


def test_too_many_rows_is_a_fetch_hint_with_a_narrow_suggestion(sales, in_conversation, settings):
    settings.DATA = {**settings.DATA, "QUERY_MAX_ROWS": 2}
    result = in_conversation("query", sql="SELECT * FROM sales")
    assert result.content.startswith("⚠ fetch hint:")
    assert "narrow:" in result.content and "save_as" in result.content


def test_save_as_keeps_the_result_as_a_dataset_that_query_frames_can_read(sales, in_conversation):
    saved = in_conversation("query", sql="SELECT * FROM sales WHERE units > 5", save_as="big")
    assert list(saved.datasets) == ["big"]
    result = in_conversation("query_frames", sql="SELECT count(*) AS n FROM big")
    assert "3" in text(result)


def test_query_frames_does_not_see_uploads(sales, in_conversation):
    result = in_conversation("query_frames", sql="SELECT * FROM sales")
    assert result.content.startswith("⚠ schema hint:") and "frame produced by a tool" in result.content


def test_a_filter_that_matches_nothing_is_ok_with_a_no_match_warning(sales, in_conversation):
    result = in_conversation("query", sql="SELECT * FROM sales WHERE region = 'west'")
    assert result.error is None and "⚠ no_match:" in result.content


def test_another_tenant_cannot_query_this_conversations_datasets(sales, in_conversation, other_conversation):
    ConversationCatalog(OTHER_TENANT, other_conversation.id)  # globex has a conversation of its own
    result = in_conversation("query", tenant=OTHER_TENANT, sql="SELECT * FROM sales")
    assert result.error and "does not belong" in result.content
    assert "north" not in result.content


def test_the_same_dataset_name_in_two_tenants_stays_apart(sales, other_conversation, registry):
    import pandas as pd

    ConversationCatalog(OTHER_TENANT, other_conversation.id).save(
        "sales", pd.DataFrame({"region": ["secret-globex"]}), source="upload"
    )
    ctx = ToolContext(tenant_id=TENANT, user_id="u1", conversation_id="conv-acme")
    result = registry.execute_tool("query", {"sql": "SELECT * FROM sales"}, ctx)
    assert "secret-globex" not in result.content and "north" in result.content

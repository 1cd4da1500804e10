"""analyze_data: pandas code over the conversation's datasets, run in the sandbox."""

from __future__ import annotations

import pytest

from datacatalog.store import ConversationCatalog
from registry.sandbox import service
from tests.conftest import TENANT, text

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def _zygote_stops():
    yield
    service.shutdown()


@pytest.fixture
def as_staff(django_user_model):
    return {"user_id": str(django_user_model.objects.create_user("analyst", is_staff=True).pk)}


def test_a_table_result_is_ok_with_a_measured_schema(sales, in_conversation, as_staff):
    code = "result = df.groupby('region', as_index=False)['units'].sum().sort_values('region')"
    result = in_conversation("analyze_data", context=as_staff, dataset="sales", code=code)
    assert result.error is None, result.content
    assert "3 rows" in result.content and "schema: region:" in result.content and "units:int64" in result.content


def test_new_frames_come_back_as_datasets(sales, in_conversation, as_staff):
    code = "frames['big'] = frames['sales'][frames['sales']['units'] > 5]\nresult = 'done'"
    result = in_conversation("analyze_data", context=as_staff, code=code)
    assert list(result.datasets) == ["big"]
    saved = ConversationCatalog(TENANT, "conv-acme").load("big")
    assert len(saved) == 3 and list(saved["units"]) == [10, 7, 8]
    assert "3" in text(in_conversation("query_frames", sql="SELECT count(*) AS n FROM big"))


def test_code_that_fails_is_a_hint_without_a_traceback(sales, in_conversation, as_staff):
    result = in_conversation("analyze_data", context=as_staff, code="result = df['nope'].sum()")
    assert result.content.startswith("⚠ schema hint: the code failed: KeyError")
    assert "Traceback" not in result.content and 'File "' not in result.content


def test_reading_files_is_refused_by_the_sandbox(sales, in_conversation, as_staff):
    result = in_conversation("analyze_data", context=as_staff, code="result = pd.read_csv('/etc/passwd')")
    assert "stopped by: language" in result.content and "root:" not in result.content


def test_ordinary_users_are_refused_by_default(sales, in_conversation):
    result = in_conversation("analyze_data", code="result = 1")
    assert result.error and "staff" in result.content


def test_every_user_may_run_it_when_the_deployment_allows(sales, in_conversation, settings):
    settings.DATA = {**settings.DATA, "ANALYZE_DATA_FOR": "all"}
    result = in_conversation("analyze_data", code="result = int(df['units'].sum())")
    assert text(result) == "32"

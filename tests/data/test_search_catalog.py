"""search_catalog: a conversation's datasets, files, documents, corpora and entities, by meaning.

A realistic catalog: two uploads in Ann's conversation, a report made by a tool, a
corpus of two documents, three entities; another conversation of the same tenant and
another tenant hold look-alikes that must never come back.
"""

from __future__ import annotations

import pytest

from conversations.models import Conversation
from datacatalog.models import GeneratedFile
from datacatalog.store import ConversationCatalog
from datacatalog.uploads import upload_dataset
from registry.context import ToolContext
from tests.conftest import OTHER_TENANT, TENANT
from tests.data.conftest import SALES_CSV
from tools import catalog_search

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER_CSV = (
    b"station,date,temperature_c,precipitation_mm,wind_speed_ms\n"
    b"Oslo-Blindern,2024-01-01,-4.2,1.5,3.1\n"
    b"Bergen-Florida,2024-01-01,3.8,12.0,7.4\n"
)
PAYROLL_CSV = b"employee,department,monthly_salary\nKari,finance,52000\nOla,sales,48000\n"


@pytest.fixture(autouse=True)
def fresh_caches():
    catalog_search.clear_cache()
    yield
    catalog_search.clear_cache()


@pytest.fixture
def ann_catalog(conversation, call, registry):
    books = ConversationCatalog(TENANT, conversation.id)
    upload_dataset(books, "sales.csv", SALES_CSV)
    upload_dataset(books, "weather_observations.csv", WEATHER_CSV)
    GeneratedFile.objects.create(
        tenant_id=TENANT,
        conversation=conversation,
        filename="quarterly_revenue_report.xlsx",
        path="/nowhere/quarterly_revenue_report.xlsx",
        mime_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        size_bytes=18_204,
        source_tool="export_excel",
    )
    made = registry.execute_tool(
        "create_corpus", {"name": "contracts", "description": "Supplier agreements"}, ToolContext(tenant_id=TENANT)
    )
    assert made.ok, made.content
    indexed = call(
        "index_content",
        corpus="contracts",
        items=[
            {
                "title": "Framework agreement with Nordvik Steel",
                "text": "Nordvik Steel supplies rolled steel beams to our Oslo plant. Payment within 30 days; "
                "the agreement renews every January unless cancelled in writing.",
            },
            {
                "title": "Canteen services",
                "text": "The canteen is open from 07:30 to 15:00 and serves a vegetarian lunch daily.",
            },
        ],
    )
    assert indexed.ok, indexed.content
    for entity, attribute, value in (
        ("Nordvik Steel", "role", "steel supplier"),
        ("Bergen harbour site", "capacity_teu", 12000),
        ("Kari Nordmann", "title", "chief financial officer"),
    ):
        assert call("record_fact", entity=entity, attribute=attribute, value=value).ok
    return books


@pytest.fixture
def elsewhere(ann_catalog, conversation):
    """The same tenant's other conversation, and another tenant, with look-alike datasets."""
    other = Conversation.objects.create(id="conv-acme-2", tenant_id=TENANT)
    upload_dataset(ConversationCatalog(TENANT, other.id), "payroll.csv", PAYROLL_CSV)
    globex = Conversation.objects.create(id="conv-globex", tenant_id=OTHER_TENANT)
    upload_dataset(ConversationCatalog(OTHER_TENANT, globex.id), "payroll_globex.csv", PAYROLL_CSV)
    return other


def search(registry, conversation_id="conv-acme", tenant=TENANT, **inputs):
    context = ToolContext(tenant_id=tenant, user_id="u1", conversation_id=conversation_id)
    return registry.execute_tool("search_catalog", inputs, context)


def first_match(result) -> str:
    """The kind and name of the best match, from the list the model reads."""
    for line in result.content.splitlines():
        if line.startswith("1. "):
            kind, name = line[3:].split(" ", 1)
            return f"{kind}:{name.split(chr(39))[1]}"
    raise AssertionError(result.content)


def test_a_dataset_is_found_by_what_it_holds_with_its_measured_schema(registry, ann_catalog):
    result = search(registry, query="daily temperature and rainfall at weather stations")
    assert result.ok, result.content
    assert first_match(result) == "dataset:weather_observations"
    assert "schema: kind:str, name:str, score:float64, summary:str, how_to_use:str" in result.content
    assert "preview_data {dataset: 'weather_observations'}" in result.content


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("when does the steel framework agreement renew", "document:Framework agreement with Nordvik Steel"),
        ("the finance director", "entity:Kari Nordmann"),
        ("revenue report spreadsheet for the quarter", "file:quarterly_revenue_report.xlsx"),
        ("units sold per region and product", "dataset:sales"),
    ],
)
def test_each_kind_is_found_by_meaning(registry, ann_catalog, query, expected):
    result = search(registry, query=query)
    assert result.ok, result.content
    assert first_match(result) == expected


def test_a_dataset_with_terse_column_names_is_found_by_the_values_it_holds(registry, conversation):
    # "t" and "wx" say nothing; "snow, sleet" and "-12.5 to 3.1" say winter weather.
    books = ConversationCatalog(TENANT, conversation.id)
    upload_dataset(books, "log.csv", b"site,t,wx\nTromso,-12.5,snow\nAlta,-8.0,snow\nTromso,3.1,sleet\n")
    upload_dataset(books, "sales.csv", SALES_CSV)
    result = search(registry, conversation_id=conversation.id, query="snowfall", kinds=["dataset"])
    assert result.ok, result.content
    assert first_match(result) == "dataset:log"
    assert "t: float64, -12.5 to 3.1" in result.content
    assert "wx: str, e.g. snow, sleet" in result.content


def test_kinds_narrow_the_search(registry, ann_catalog):
    result = search(registry, query="supplier agreements", kinds=["corpus"])
    assert result.ok, result.content
    assert "contracts" in result.content
    assert "Nordvik Steel" not in result.content.split("how_to_use", 1)[1].split("search_documents")[0]


def test_another_conversation_and_another_tenant_are_never_searched(registry, elsewhere):
    mine = search(registry, query="employee salaries by department", kinds=["dataset"], limit=20)
    assert "payroll" not in mine.content
    theirs = search(registry, conversation_id=elsewhere.id, query="employee salaries by department", kinds=["dataset"])
    assert first_match(theirs) == "dataset:payroll"
    assert "weather" not in theirs.content and "dataset 'sales'" not in theirs.content
    globex = search(
        registry, tenant=OTHER_TENANT, conversation_id="conv-globex", query="employee salaries by department", limit=20
    )
    assert "payroll_globex" in globex.content
    assert "payroll |" not in globex.content and "Nordvik" not in globex.content
    # acme's conversation id named by a globex caller gives nothing of acme's.
    foreign = search(registry, tenant=OTHER_TENANT, conversation_id="conv-acme", query="weather stations")
    assert "weather_observations" not in foreign.content


def test_a_new_upload_is_found_by_the_next_search(registry, ann_catalog):
    before = search(registry, query="employee salaries by department", kinds=["dataset"])
    assert "payroll" not in before.content
    upload_dataset(ann_catalog, "payroll.csv", PAYROLL_CSV)
    after = search(registry, query="employee salaries by department", kinds=["dataset"])
    assert first_match(after) == "dataset:payroll"


def test_nothing_relevant_is_a_fetch_hint_not_a_guess(registry, ann_catalog):
    result = search(registry, query="zzqx vlorp", kinds=["dataset"])
    assert result.ok
    assert result.content.startswith("⚠ fetch hint: nothing in this conversation's catalog (dataset)")


def test_an_empty_catalog_is_a_fetch_hint(registry, conversation):
    result = search(registry, query="sales by region")
    assert result.content.startswith("⚠ fetch hint: nothing in this conversation's catalog")


def test_bad_input_names_the_field(registry, ann_catalog):
    result = search(registry, query="sales", kinds=["spreadsheet"])
    assert result.content.startswith("⚠ schema hint: invalid input for search_catalog: kinds.0: must be one of")
    assert "Traceback" not in result.content
    assert "query" in search(registry, query="").content


def test_without_a_conversation_the_tenants_knowledge_is_still_searched(registry, ann_catalog):
    result = search(registry, conversation_id=None, query="steel supplier")
    assert result.ok, result.content
    assert "Nordvik Steel" in result.content
    assert "weather_observations" not in search(registry, conversation_id=None, query="weather stations").content


def test_an_unchanged_catalog_is_not_rebuilt(registry, ann_catalog, django_assert_max_num_queries):
    search(registry, query="sales")
    # Warm: the fingerprint (one aggregate per kind, plus the conversation check) and nothing else.
    with django_assert_max_num_queries(8):
        assert search(registry, query="weather stations").ok

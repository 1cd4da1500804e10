"""create_kit and search_kits: a conversation's work kept for the tenant, found and loaded elsewhere.

Ann keeps her sales analysis as a kit; the tenant already has two unrelated kits.
A colleague's new conversation finds it by what it is about and loads it: the
datasets are registered there and the charts drawn again. Another tenant never
sees it.
"""

from __future__ import annotations

import pandas as pd
import pytest

from conversations.models import Conversation
from datacatalog.store import ConversationCatalog
from registry.context import ToolContext
from tests.conftest import OTHER_TENANT, TENANT
from tools import catalog_search, kits
from tools.models import Kit

pytestmark = pytest.mark.django_db(transaction=True)

SALES_KIT = {
    "name": "regional sales review",
    "description": "Units sold and prices per region and product for the quarterly sales review.",
    "datasets": ["sales"],
    "queries": [{"title": "units per region", "sql": "SELECT region, SUM(units) FROM sales GROUP BY region"}],
    "charts": [{"dataset": "sales", "x": "region", "y": "units", "aggregate": "sum", "title": "Units by region"}],
}


@pytest.fixture(autouse=True)
def fresh_index():
    kits.clear_cache()
    catalog_search.clear_cache()
    yield
    kits.clear_cache()
    catalog_search.clear_cache()


@pytest.fixture
def colleague(transactional_db):
    """Another conversation of the same tenant, empty."""
    return Conversation.objects.create(id="conv-acme-2", tenant_id=TENANT)


def call_in(registry, conversation_id, tool, tenant=TENANT, **inputs):
    context = ToolContext(tenant_id=tenant, user_id="u1", conversation_id=conversation_id)
    return registry.execute_tool(tool, inputs, context)


@pytest.fixture
def saved(sales, in_conversation, conversation):
    """The sales kit, beside two other kits of the tenant made in another conversation."""
    other = Conversation.objects.create(id="conv-acme-hr", tenant_id=TENANT)
    books = ConversationCatalog(TENANT, other.id)
    books.save("payroll", pd.DataFrame({"employee": ["Kari"], "monthly_salary": [52000]}), source="upload")
    books.save("stations", pd.DataFrame({"station": ["Oslo"], "temperature_c": [-4.2]}), source="upload")
    for name, dataset, description in (
        ("payroll audit", "payroll", "Monthly salaries per employee and department for the payroll audit."),
        ("weather stations", "stations", "Daily temperature readings at the weather stations."),
    ):
        made = in_conversation("create_kit", name=name, description=description, datasets=[dataset])
        assert made.content.startswith("⚠"), "another conversation's dataset is not this one's to keep"
        context = {"conversation_id": other.id}
        assert in_conversation("create_kit", context=context, name=name, description=description).ok
    result = in_conversation("create_kit", **SALES_KIT)
    assert result.ok, result.content
    return result


def test_a_kit_copies_its_datasets_and_says_how_to_load_it(saved):
    kit = Kit.objects.get(tenant_id=TENANT, name="regional sales review")
    assert [d["name"] for d in kit.datasets] == ["sales"] and kit.datasets[0]["rows"] == 5
    assert "/kits/" in kit.datasets[0]["path"] and kit.embedding_model
    assert "search_kits {load: 'regional sales review'}" in saved.content


def test_another_conversation_of_the_tenant_finds_the_kit_by_what_it_is_about(registry, saved, colleague):
    found = call_in(registry, colleague.id, "search_kits", query="how many units did each region sell")
    assert found.ok, found.content
    first = next(line for line in found.content.splitlines() if line.startswith("1. "))
    assert first.startswith("1. 'regional sales review'") and "datasets: sales" in first


def test_loading_a_kit_registers_its_datasets_and_redraws_its_charts(registry, saved, colleague):
    loaded = call_in(registry, colleague.id, "search_kits", load="regional sales review")
    assert loaded.ok, loaded.content
    assert ConversationCatalog(TENANT, colleague.id).load("sales")["units"].sum() == 32
    chart, image = loaded.cards
    assert chart["type"] == "chart" and chart["title"] == "Units by region" and image["type"] == "file_download"
    assert "SELECT region, SUM(units) FROM sales GROUP BY region" in loaded.content
    preview = call_in(registry, colleague.id, "preview_data", dataset="sales")
    assert preview.ok and "north" in preview.content


def test_loading_a_kit_twice_replaces_what_it_loaded_before(registry, saved, colleague):
    assert call_in(registry, colleague.id, "search_kits", load="regional sales review").ok
    again = call_in(registry, colleague.id, "search_kits", load="regional sales review")
    assert again.ok, again.content


def test_loading_over_a_dataset_of_the_same_name_is_a_hint(registry, saved, colleague):
    ConversationCatalog(TENANT, colleague.id).save("sales", pd.DataFrame({"x": [1]}), source="upload")
    refused = call_in(registry, colleague.id, "search_kits", load="regional sales review")
    assert refused.content.startswith("⚠ schema hint: load: this conversation already has dataset(s) sales")
    assert list(ConversationCatalog(TENANT, colleague.id).load("sales").columns) == ["x"]


def test_another_tenant_neither_finds_nor_loads_the_kit(registry, saved):
    globex = Conversation.objects.create(id="conv-globex", tenant_id=OTHER_TENANT)
    found = call_in(registry, globex.id, "search_kits", tenant=OTHER_TENANT, query="sales per region")
    assert found.content.startswith("⚠ fetch hint: no kit of this tenant matches") and "review" not in found.content
    loaded = call_in(registry, globex.id, "search_kits", tenant=OTHER_TENANT, load="regional sales review")
    assert loaded.content.startswith("⚠ schema hint: load: no kit named 'regional sales review'")
    assert not ConversationCatalog(OTHER_TENANT, globex.id).names()


def test_a_kit_name_is_taken_until_replace_is_passed(saved, in_conversation):
    taken = in_conversation("create_kit", **SALES_KIT)
    assert taken.content.startswith("⚠ schema hint: name: the tenant already has a kit named")
    old_path = Kit.objects.get(name="regional sales review").datasets[0]["path"]
    replaced = in_conversation("create_kit", **{**SALES_KIT, "charts": [], "replace": True})
    assert replaced.ok, replaced.content
    kit = Kit.objects.get(name="regional sales review")
    assert kit.charts == [] and kit.datasets[0]["path"] != old_path


def test_only_its_maker_or_staff_replace_a_kit(saved, in_conversation, django_user_model):
    before = Kit.objects.get(name="regional sales review")
    replacement = {**SALES_KIT, "charts": [], "replace": True}

    refused = in_conversation("create_kit", context={"user_id": "u2"}, **replacement)

    assert refused.error and "was made by someone else: only they, staff or holders of tools.change_kit" in (
        refused.content
    )
    kept = Kit.objects.get(name="regional sales review")
    assert (kept.pk, kept.charts, kept.datasets) == (before.pk, before.charts, before.datasets)
    django_user_model.objects.create_user("ops", is_staff=True)
    assert in_conversation("create_kit", context={"user_id": "ops"}, **replacement).ok
    assert Kit.objects.get(name="regional sales review").created_by == "ops"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"datasets": ["sale"]}, "⚠ schema hint: no dataset named 'sale'"),
        ({"charts": [{"dataset": "sales", "x": "regions", "y": "units"}]}, "⚠ schema hint: charts[0].x: no column"),
        ({"charts": [{"dataset": "other", "x": "a", "y": "b"}]}, "⚠ schema hint: charts[0].dataset: 'other'"),
        ({"queries": [{"title": "no sql"}]}, "⚠ schema hint:"),
    ],
)
def test_a_kit_that_cannot_be_made_names_the_field(sales, in_conversation, change, expected):
    result = in_conversation("create_kit", **{**SALES_KIT, **change})
    assert result.content.startswith(expected), result.content
    assert not Kit.objects.exists()


def test_search_kits_needs_a_query_or_a_kit_to_load(registry, colleague):
    result = call_in(registry, colleague.id, "search_kits")
    assert result.content.startswith("⚠ schema hint: query: say what the kit should hold")


def test_search_catalog_names_the_tenants_kits_with_the_call_that_loads_them(registry, saved, colleague):
    found = call_in(registry, colleague.id, "search_catalog", query="quarterly sales review by region", kinds=["kit"])
    assert found.ok, found.content
    first = next(line for line in found.content.splitlines() if line.startswith("1. "))
    assert first.startswith("1. kit 'regional sales review'")
    assert "use: search_kits {load: 'regional sales review'}" in found.content
    globex = Conversation.objects.create(id="conv-globex", tenant_id=OTHER_TENANT)
    theirs = call_in(registry, globex.id, "search_catalog", tenant=OTHER_TENANT, query="sales review", kinds=["kit"])
    assert theirs.content.startswith("⚠ fetch hint: nothing in this conversation's catalog (kit)")

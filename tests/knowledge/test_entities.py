"""Entities: facts with provenance, recall by name, alias or meaning, links, tables; tenants apart."""

import pandas as pd
import pytest

from tests.conftest import OTHER_TENANT, TENANT
from tools.models import Entity, Fact

pytestmark = pytest.mark.django_db(transaction=True)

CONTEXT = {"conversation_id": "conv-1", "tool_use_id": "toolu_42"}


def test_a_fact_is_recorded_with_its_provenance(call):
    result = call(
        "record_fact",
        context=CONTEXT,
        entity="Helios SA",
        entity_type="company",
        attribute="headquarters",
        value="Lyon",
        source="annual report",
    )
    assert result.error is None and "New entity" in result.content
    fact = Fact.objects.get()
    assert (fact.tenant_id, fact.conversation_id, fact.tool_call_id, fact.source) == (
        TENANT,
        "conv-1",
        "toolu_42",
        "annual report",
    )
    assert fact.recorded_at is not None


def test_a_newer_value_supersedes_the_old_one_which_stays_in_history(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="employees", value=120)
    again = call("record_fact", entity="helios sa", attribute="employees", value=135)
    assert "(was 120" in again.content
    shown = call("get_entity", entity="Helios SA").content
    assert "employees: 135" in shown and "1 current, 2 recorded" in shown
    assert Entity.objects.count() == 1


def test_an_entity_is_found_by_an_alias(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Lyon", aliases=["Helios"])
    assert "by alias" in call("recall_entities", query="helios").content
    assert call("get_entity", entity="Helios").content.startswith("✓ ok.")


def test_recall_finds_an_entity_by_meaning(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="business", value="builds solar farms")
    call("record_fact", entity="Boulangerie Martin", entity_type="company", attribute="business", value="bakes bread")
    result = call("recall_entities", query="solar energy company", limit=1)
    assert "Helios SA" in result.content and "by meaning" in result.content


def test_recall_with_nothing_close_gets_a_fetch_hint(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Lyon")
    assert call("recall_entities", query="zzqx vlorp").content.startswith("⚠ fetch hint: no entity matches")


def test_an_unknown_entity_gets_did_you_mean(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Lyon")
    result = call("get_entity", entity="Helio SA")
    assert result.content.startswith("⚠ schema hint: no entity called 'Helio SA'") and "Helios SA" in result.content


def test_a_name_shared_by_two_types_is_ambiguous_until_the_type_is_given(call):
    call("record_fact", entity="Mercury", entity_type="planet", attribute="moons", value=0)
    call("record_fact", entity="Mercury", entity_type="element", attribute="symbol", value="Hg")
    assert call("get_entity", entity="Mercury").content.startswith("⚠ ambiguous:")
    assert "symbol: 'Hg'" in call("get_entity", entity="Mercury", entity_type="element").content


def test_links_show_on_both_entities(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Lyon")
    call("record_fact", entity="Lyon solar farm", entity_type="site", attribute="output_gwh", value=4.2)
    assert call("link_entities", source="Helios SA", target="Lyon solar farm", relation="operates").error is None
    assert "→ operates Lyon solar farm (site)" in call("get_entity", entity="Helios SA").content
    assert "← Helios SA (company) operates this" in call("get_entity", entity="Lyon solar farm").content
    assert call("link_entities", source="Helios SA", target="Nowhere", relation="owns").content.startswith(
        "⚠ schema hint"
    )


def test_list_entities_pages_and_hints_at_the_known_types(call):
    for n in range(3):
        call("record_fact", entity=f"Site {n}", entity_type="site", attribute="n", value=n)
    page = call("list_entities", entity_type="site", limit=2)
    assert "3 entities; showing 1–2" in page.content and "offset 2" in page.content
    assert "site" in call("list_entities", entity_type="sites").content


def test_ingest_entities_reads_a_dataset_of_the_conversation(call, tool):
    frame = pd.DataFrame(
        {"name": ["Lyon", "Brest", "Lyon "], "output": [4.2, 6.0, None], "kind": ["solar", "wind", "solar"]}
    )
    result = call(
        "ingest_entities",
        context={"datasets": {"sites": frame}},
        dataset="sites",
        name_column="name",
        entity_type="site",
    )
    assert result.error is None, result.content
    assert Entity.objects.filter(entity_type="site").count() == 2
    assert Fact.objects.filter(attribute="output").count() == 2  # the missing value is not a fact
    assert Fact.objects.first().source == "dataset 'sites'"
    table = tool(
        "define_entity_projection", {"name": "site_table", "entity_type": "site", "attributes": ["kind", "output"]}
    )
    assert table.error is None and "site_table" in table.datasets
    assert sorted(table.datasets["site_table"]["entity"]) == ["Brest", "Lyon"]


def test_ingest_hints_at_the_datasets_and_columns_there_are(call):
    assert (
        "sites"
        in call("ingest_entities", context={"datasets": {"sites": []}}, dataset="site", name_column="name").content
    )
    result = call("ingest_entities", rows=[{"title": "x"}], name_column="name")
    assert result.content.startswith("⚠ schema hint: name_column 'name'") and "title" in result.content


def test_another_tenant_never_sees_or_matches_a_tenants_entities(call):
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Lyon")
    assert call("get_entity", entity="Helios SA", tenant=OTHER_TENANT).content.startswith("⚠ schema hint")
    assert call("recall_entities", query="Helios SA", tenant=OTHER_TENANT).content.startswith("⚠ fetch hint")
    assert "0 entities" in call("list_entities", tenant=OTHER_TENANT).content
    call("record_fact", entity="Helios SA", entity_type="company", attribute="city", value="Paris", tenant=OTHER_TENANT)
    assert Entity.objects.count() == 2
    assert "Lyon" in call("get_entity", entity="Helios SA").content

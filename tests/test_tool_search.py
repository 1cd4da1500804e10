"""search_tools over the live registry: meaning, tenancy, lifecycle, stored vectors."""

import numpy as np
import pytest
from django.utils import timezone

from registry.models import ToolDefinition, ToolStatus
from registry.retrieval import DIMENSION, MODEL_ID
from registry.retrieval.documents import PASSAGE_TOKENS
from tests import handlers
from tests.conftest import OTHER_TENANT, TENANT

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(make_tool):
    make_tool(
        "send_email",
        handlers.echo,
        description="Send an email message to a recipient.",
        input_schema={"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}},
    )
    # create_chart is a seeded system tool (declared in tools/charts.py).
    make_tool("geocode_address", handlers.echo, description="Turn a street address into latitude and longitude.")


def found(registry, query, tenant=TENANT, limit=3):
    return [d.name for d, _ in registry.tool_search().search(query, tenant, limit)]


def test_a_paraphrase_finds_the_tool_that_means_it(registry, catalog):
    assert found(registry, "write to my colleague's inbox")[0] == "send_email"
    assert found(registry, "where on the map is 10 Downing Street")[0] == "geocode_address"


def test_search_tools_returns_ranked_tools_with_their_schemas(call, catalog):
    result = call("search_tools", query="visualise sales as bars", limit=2)
    assert result.content.splitlines()[2].startswith("- create_chart:")
    assert "input_schema:" in result.content


def test_each_tools_vector_is_stored_on_its_row_with_the_model_that_made_it(registry, catalog):
    found(registry, "email")
    row = ToolDefinition.objects.get(name="send_email")
    assert row.embedding_model.startswith(f"{MODEL_ID}/{PASSAGE_TOKENS}wp#")
    assert np.frombuffer(bytes(row.embedding), dtype=np.float32).shape == (DIMENSION,)


def test_a_changed_description_is_re_embedded(registry, catalog):
    found(registry, "email")
    before = ToolDefinition.objects.get(name="geocode_address").embedding_model
    row = ToolDefinition.objects.get(name="geocode_address")
    row.description = "Translate text between languages."
    row.save()
    assert found(registry, "translate this sentence into French")[0] == "geocode_address"
    assert ToolDefinition.objects.get(name="geocode_address").embedding_model != before


def test_a_new_process_reuses_stored_vectors(registry, catalog):
    from registry.registry import ToolRegistry

    found(registry, "email")
    ToolDefinition.objects.filter(name="send_email").update(embedding_model="forged-tag")
    stored = {name: bytes(blob) for name, blob in ToolDefinition.objects.values_list("name", "embedding")}
    fresh = ToolRegistry()
    for name in ("send_email", "geocode_address"):  # the new process has their handlers too (else they are not offered)
        fresh.register_handler(name, handlers.echo)
    assert found(fresh, "email")[0] == "send_email"
    after = {name: bytes(blob) for name, blob in ToolDefinition.objects.values_list("name", "embedding")}
    assert after["geocode_address"] == stored["geocode_address"]  # reused as stored
    assert ToolDefinition.objects.get(name="send_email").embedding_model.startswith(MODEL_ID)  # re-made


def test_a_retired_tool_is_never_returned(registry, catalog):
    assert "send_email" in found(registry, "send an email")
    row = ToolDefinition.objects.get(name="send_email")
    row.deleted_at = timezone.now()
    row.save()
    assert "send_email" not in found(registry, "send an email")


def test_a_tool_is_found_once_approved_without_a_restart(registry, make_tool):
    tool = make_tool("summarise_pdf", handlers.echo, description="Summarise a PDF document.", status=ToolStatus.TESTING)
    assert "summarise_pdf" not in found(registry, "summarise this pdf")
    tool.status = ToolStatus.APPROVED
    tool.save()
    assert found(registry, "summarise this pdf")[0] == "summarise_pdf"


def test_a_disabled_tool_is_not_returned(registry, catalog):
    row = ToolDefinition.objects.get(name="geocode_address")
    row.enabled = False
    row.save()
    assert "geocode_address" not in found(registry, "latitude of an address")


def test_a_tool_disabled_after_a_search_found_it_is_not_offered_again(registry, catalog):
    assert "geocode_address" in found(registry, "latitude of an address")
    row = ToolDefinition.objects.get(name="geocode_address")
    row.enabled = False
    row.save()
    assert "geocode_address" not in found(registry, "latitude of an address")


def test_search_never_returns_another_tenants_tool(registry, make_tool):
    make_tool("globex_payroll", handlers.echo, description="Run the monthly payroll.", tenant_id=OTHER_TENANT)
    assert "globex_payroll" not in found(registry, "run payroll", tenant=TENANT)
    assert found(registry, "run payroll", tenant=OTHER_TENANT)[0] == "globex_payroll"


def test_an_unrelated_query_returns_nothing_rather_than_noise(registry, catalog):
    assert found(registry, "zzqx vvbn") == []


def test_an_unknown_tool_name_is_answered_with_tools_found_by_meaning(call, catalog):
    result = call("email_sender")
    assert "  1. send_email (score" in result.content


def test_a_query_is_kept_for_the_tenant_that_searched_it_only(registry, catalog, monkeypatch):
    from registry.retrieval import Embedder

    embedder = Embedder.default()
    embedded = []
    real_embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts, **kw: embedded.extend(texts) or real_embed(texts, **kw))
    found(registry, "email")  # build the index first: its documents are embedded too
    embedded.clear()
    query = "send the board the merger memo"

    found(registry, query)
    found(registry, query)
    found(registry, query, tenant=OTHER_TENANT)

    assert embedded == [query, query]


def test_an_mcp_tool_is_read_by_its_servers_name_for_it_in_every_tenant(registry, make_tool):
    from registry.mcp.naming import describe, implementation, tool_name
    from registry.models import ToolType
    from registry.search import document_for

    texts = []
    for tenant in (TENANT, OTHER_TENANT):
        name = tool_name(tenant, "github", "create_issue")  # mcp_<tenant tag>_github_create_issue
        make_tool(
            name,
            tool_type=ToolType.MCP,
            tenant_id=tenant,
            description=describe("github", "Open a new issue in a repository."),
            implementation=implementation(7, "create_issue"),
        )
        texts.append(document_for(registry.definitions()[name]).embedding_text())

    assert texts[0] == texts[1] == "create issue: [MCP: github] Open a new issue in a repository."

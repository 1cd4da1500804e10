"""Corpora: index text, Markdown, HTML, PDF and DOCX; search them; read, move; tenants kept apart."""

import pytest

from tests.conftest import OTHER_TENANT, TENANT, text
from tests.knowledge.documents_fixtures import HTML, docx_bytes, pdf_bytes
from tools.models import Chunk, Document

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def corpus(call, tool):
    assert tool("create_corpus", {"name": "reports"}).error is None
    return "reports"


def test_each_supported_format_is_extracted_and_indexed(call, corpus, upload):
    upload("farm.html", HTML)
    upload("wind.pdf", pdf_bytes("The Brest wind park has 14 turbines.", "Maintenance happens every spring."))
    upload("hydro.docx", docx_bytes("Hydro", "The Grenoble dam stores 80 million cubic metres."))
    upload("notes.md", "# Notes\n\nBattery storage in Nantes holds 30 MWh.")
    items = [{"upload": n} for n in ("farm.html", "wind.pdf", "hydro.docx", "notes.md")]
    items.append({"text": "Plain text about geothermal wells in Alsace.", "title": "Geothermal"})
    result = call("index_content", corpus=corpus, items=items)
    assert result.error is None, result.content
    formats = dict(Document.objects.values_list("title", "format"))
    assert formats == {
        "Solar farm report": "html",
        "wind.pdf": "pdf",
        "hydro.docx": "docx",
        "Notes": "markdown",
        "Geothermal": "text",
    }
    html = Document.objects.get(format="html").text
    assert "4.2 GWh" in html and "- Operator: Helios SA" in html and "var x" not in html and "color:red" not in html
    assert "14 turbines" in Document.objects.get(format="pdf").text
    assert "# Hydro" in Document.objects.get(format="docx").text


def test_reindexing_an_unchanged_document_is_a_no_op(call, corpus, upload):
    upload("notes.md", "# Notes\n\nBattery storage in Nantes holds 30 MWh.")
    call("index_content", corpus=corpus, items=[{"upload": "notes.md"}])
    before = list(Chunk.objects.values_list("id", "embedding_model"))
    again = call("index_content", corpus=corpus, items=[{"upload": "notes.md"}])
    assert "unchanged" in again.content
    assert list(Chunk.objects.values_list("id", "embedding_model")) == before


def test_a_changed_document_replaces_its_passages(call, corpus, upload):
    upload("notes.md", "Battery storage in Nantes holds 30 MWh.")
    call("index_content", corpus=corpus, items=[{"upload": "notes.md"}])
    upload("notes.md", "Battery storage in Nantes now holds 45 MWh.")
    assert "replaced" in call("index_content", corpus=corpus, items=[{"upload": "notes.md"}]).content
    assert Document.objects.count() == 1
    assert "45 MWh" in " ".join(Chunk.objects.values_list("text", flat=True))


def test_search_finds_passages_by_meaning_and_labels_them_for_citation(call, corpus):
    call(
        "index_content",
        corpus=corpus,
        items=[
            {"text": "The Brest wind park has 14 turbines and produced 60 GWh.", "title": "Wind"},
            {"text": "Our cafeteria menu changes every Monday.", "title": "Cafeteria"},
        ],
    )
    result = call("search_documents", query="how many turbines are there in the wind park?")
    assert result.error is None
    first = text(result).split("\n\n")[0]
    chunk = Chunk.objects.get(document__title="Wind")
    assert f"[p{chunk.pk}] Wind" in result.content
    assert first.startswith("1 passage") or "Cafeteria" not in first
    assert result.cards[0]["type"] == "document_passages"
    assert result.cards[0]["passages"][0]["id"] == f"p{chunk.pk}"


def test_an_unmatched_query_gets_a_fetch_hint(call, corpus):
    call("index_content", corpus=corpus, items=[{"text": "The Brest wind park has 14 turbines.", "title": "Wind"}])
    result = call("search_documents", query="zzqx vlorp")
    assert result.content.startswith("⚠ fetch hint: no passage matches")


def test_searching_before_anything_is_indexed_says_to_index_first(call, corpus):
    assert "index_content" in call("search_documents", query="turbines").content


def test_an_unknown_corpus_gets_the_closest_names(call, corpus):
    result = call("search_documents", query="turbines", corpora=["report"])
    assert result.content.startswith("⚠ schema hint: corpus 'report' does not exist")
    assert "reports" in result.content


def test_a_missing_upload_is_a_hint_naming_the_closest_upload(call, corpus, upload):
    upload("annual-report.pdf", pdf_bytes("Revenue rose."))
    result = call("index_content", corpus=corpus, items=[{"upload": "anual-report.pdf"}])
    assert result.content.startswith("⚠ schema hint: upload 'anual-report.pdf' does not exist")
    assert "annual-report.pdf" in result.content


def test_an_upload_name_cannot_leave_the_tenants_folder(call, corpus, upload):
    upload("secret.txt", "globex secret", tenant=OTHER_TENANT)
    result = call("index_content", corpus=corpus, items=[{"upload": f"../../{OTHER_TENANT}/uploads/secret.txt"}])
    assert result.content.startswith("⚠ schema hint: upload:")
    assert not Document.objects.exists()


def test_an_item_needs_exactly_one_source(call, corpus):
    result = call("index_content", corpus=corpus, items=[{"title": "nothing"}])
    assert "exactly one of upload, file_id or text" in result.content


def test_get_document_text_returns_the_whole_text(call, corpus):
    long_text = " ".join(f"Sentence number {n} about turbines." for n in range(400))
    call("index_content", corpus=corpus, items=[{"text": long_text, "title": "Long"}])
    document = Document.objects.get()
    assert Chunk.objects.filter(document=document).count() > 5
    assert long_text in call("get_document_text", document_id=document.pk).content


def test_move_documents_changes_which_corpus_a_search_covers(call, tool, corpus):
    tool("create_corpus", {"name": "archive"})
    call("index_content", corpus=corpus, items=[{"text": "The Brest wind park has 14 turbines.", "title": "Wind"}])
    document = Document.objects.get()
    assert call("move_documents", document_ids=[document.pk], to_corpus="archive").error is None
    assert "no documents" in call("search_documents", query="turbines", corpora=["reports"]).content
    assert "[p" in call("search_documents", query="turbines", corpora=["archive"]).content


def test_another_tenant_never_sees_or_reads_a_tenants_documents(call, corpus):
    call("index_content", corpus=corpus, items=[{"text": "The Brest wind park has 14 turbines.", "title": "Wind"}])
    document = Document.objects.get()
    assert "no documents" in call("search_documents", query="turbines", tenant=OTHER_TENANT).content
    assert call("get_document_text", document_id=document.pk, tenant=OTHER_TENANT).content.startswith("⚠ schema hint")
    assert call("index_content", tenant=OTHER_TENANT, corpus=corpus, items=[{"text": "x"}]).content.startswith(
        "⚠ schema hint: corpus 'reports' does not exist"
    )
    assert Document.objects.filter(tenant_id=TENANT).count() == 1

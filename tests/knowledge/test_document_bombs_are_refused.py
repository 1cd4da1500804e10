"""index_content refuses a DOCX that inflates past the archive limits and a PDF whose stream
inflates past EUNICE_PDF_MAX_STREAM_MB or that has too many pages: a Hint naming the limit,
at once, and nothing is indexed."""

import time

import pytest

from tests.hostile_files import office_bomb, pdf_stream_bomb
from tests.knowledge.documents_fixtures import pdf_bytes
from tools.models import Document

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1 << 20


@pytest.fixture
def corpus(tool):
    assert tool("create_corpus", {"name": "reports"}).error is None
    return "reports"


def index(call, corpus, name):
    return call("index_content", corpus=corpus, items=[{"upload": name}])


@pytest.mark.parametrize("padding", [2 * MB, 700 * MB])
def test_a_docx_inflating_a_thousandfold_is_refused_at_once(call, corpus, upload, padding):
    upload("bomb.docx", office_bomb("docx", padding))
    started = time.monotonic()
    result = index(call, corpus, "bomb.docx")
    assert result.content.startswith("⚠ schema hint") and "EUNICE_ARCHIVE_MAX_RATIO" in result.content
    assert "word/document.xml" in result.content
    assert time.monotonic() - started < 5
    assert not Document.objects.exists()


def test_a_docx_over_the_uncompressed_total_is_refused(call, corpus, upload, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "ARCHIVE_MAX_BYTES": 1 * MB}
    upload("noisy.docx", office_bomb("docx", 0, noise=2 * MB))
    assert "EUNICE_ARCHIVE_MAX_MB" in index(call, corpus, "noisy.docx").content


def test_a_pdf_stream_inflating_past_the_limit_is_refused(call, corpus, upload, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "PDF_MAX_STREAM_BYTES": 1 * MB}
    upload("bomb.pdf", pdf_stream_bomb(4 * MB))
    result = index(call, corpus, "bomb.pdf")
    assert result.content.startswith("⚠ schema hint") and "EUNICE_PDF_MAX_STREAM_MB" in result.content


def test_a_pdf_of_too_many_pages_is_refused(call, corpus, upload, settings):
    settings.INPUT_LIMITS = {**settings.INPUT_LIMITS, "PDF_MAX_PAGES": 1}
    upload("two.pdf", pdf_bytes(*["A long paragraph about wind. " * 40] * 12))
    assert "EUNICE_PDF_MAX_PAGES" in index(call, corpus, "two.pdf").content


def test_ordinary_documents_are_still_indexed(call, corpus, upload):
    upload("small.pdf", pdf_stream_bomb(64 * 1024))  # within every limit: a blank page
    upload("padded.docx", office_bomb("docx", 512 * 1024))
    upload("real.pdf", pdf_bytes("The Brest wind park has 14 turbines."))
    assert index(call, corpus, "real.pdf").error is None
    assert "no extractable text" in index(call, corpus, "small.pdf").content  # read, found empty

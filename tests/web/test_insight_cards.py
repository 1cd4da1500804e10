"""The insight tools' cards in real Chromium: a classification and an extraction, drawn
in the side panel with their cited passages, the model's words shown as text."""

import json

import pytest

from tests.web.conftest import CHROMIUM
from tests.web.test_browser import open_conversation, say, sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)"),
]

LETTER = "Invoice INV-2041 from Helios SA.\n\nTotal due: 18,450.00 EUR."
CLASSIFIED = {
    "labels": [{"label": "invoice", "confidence": 0.9, "reason": "<img src=x onerror=alert(1)>", "citations": ["s1"]}]
}
EXTRACTED = {"values": {"number": "INV-2041", "total": 18450}, "citations": {"number": ["s1"], "total": ["s1"]}}
SCHEMA = {"type": "object", "properties": {"number": {"type": "string"}, "total": {"type": "number"}}}


@pytest.fixture
def reader(scripted_model, conversation):
    """The chat model calls both tools in turn; each tool's model call (the insight role
    falls back to chat's row) is the turn after. Runs before `server`."""
    from conversations.models import WorkingSetEntry

    for name in ("classify_document", "extract_document"):
        WorkingSetEntry.objects.create(conversation=conversation, tool_name=name)
    classify = {"text": LETTER, "labels": ["invoice", "complaint"]}
    extract = {"text": LETTER, "json_schema": SCHEMA}
    return scripted_model(
        [
            {"tool_uses": [{"name": "classify_document", "input": classify, "id": "toolu_1"}]},
            {"text": [json.dumps(CLASSIFIED)]},
            {"tool_uses": [{"name": "extract_document", "input": extract, "id": "toolu_2"}]},
            {"text": [json.dumps(EXTRACTED)]},
            {"text": ["It is invoice INV-2041, 18,450 EUR due."]},
        ]
    )


def test_classification_and_extraction_cards_are_drawn_with_their_passages(reader, server, conversation, browser_page):
    page = browser_page
    sign_in(page, server)
    open_conversation(page, server, conversation)
    say(page, "What is this letter?")
    page.wait_for_selector("#panel .card-extraction_result table.fields")
    classification = page.locator("#panel .card-classification_result")
    assert classification.locator(".labels strong").text_content() == "invoice"
    assert classification.locator("meter").get_attribute("aria-label") == "confidence 90%"
    assert classification.locator(".reason").text_content() == "<img src=x onerror=alert(1)>"
    assert classification.locator("img").count() == 0
    assert classification.locator(".citations summary").text_content() == "s1"
    rows = page.locator("#panel .card-extraction_result table.fields tr")
    assert [rows.nth(n).locator("th").text_content() for n in (1, 2)] == ["number", "total"]
    assert rows.nth(2).locator("td").first.text_content() == "18450"
    page.locator("#panel .card-extraction_result summary").first.click()
    assert "Invoice INV-2041" in page.locator("#panel .card-extraction_result blockquote").first.text_content()
    assert reader.failures == []

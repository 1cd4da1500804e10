"""Document insight: schemas and taxonomies saved per tenant, documents classified and
extracted by a scripted model, replies held to their schemas (one repair, then an Err),
citations limited to the document's passages, costs charged."""

import json

import pytest

from conversations.models import UsageLog
from llm.models import ModelConfig
from tests.conftest import OTHER_TENANT, TENANT, text
from tools.models import Chunk, InsightDefinition

pytestmark = pytest.mark.django_db(transaction=True)

USAGE = {"input_tokens": 1000, "output_tokens": 100}
COST = 1000 * 3e-6 + 100 * 15e-6  # the chat row's prices (tests/conversations/conftest.py)
# Three paragraphs too long to share a passage: s1, s2, s3 (p<ID> each once indexed).
INVOICE = "\n\n".join(
    [
        "Invoice INV-2041 from Helios SA, dated 2026-03-14. " + "Helios SA, 4 rue des Forges, Lyon. " * 12,
        "Installation of 12 solar panels on the Lyon warehouse roof. " + "Labour and materials included. " * 14,
        "Total due: 18,450.00 EUR, payable within 30 days. " + "Late payment incurs a fee. " * 16,
    ]
)
INVOICE_FIELDS = [
    {"name": "number", "required": True},
    {"name": "supplier"},
    {"name": "date", "type": "date"},
    {"name": "total", "type": "number", "description": "The amount due"},
]


def reply(data, **turn):
    return {"text": [json.dumps(data)], "usage": USAGE, **turn}


@pytest.fixture
def invoice_document(call, tool):
    """The invoice, indexed: its passages are labelled p<ID>, as search_documents labels them."""
    tool("create_corpus", {"name": "mail"})
    assert call("index_content", corpus="mail", items=[{"text": INVOICE, "title": "Invoice 2041"}]).error is None
    return Chunk.objects.get(text__startswith="Invoice INV-2041").document


@pytest.fixture
def mail_taxonomy(tool):
    assert tool("create_schema", {"name": "invoice", "fields": INVOICE_FIELDS}).error is None
    labels = [
        {"label": "invoice", "description": "A bill to pay", "schema": "invoice"},
        {"label": "complaint", "description": "A customer is unhappy"},
    ]
    assert tool("create_taxonomy", {"name": "mail", "labels": labels}).error is None
    return "mail"


def repair_text(server):
    """What the second request told the model was wrong with its first reply."""
    return server.requests[1].messages[2]["content"][0]["text"]


def passages(document):
    return [f"p{pk}" for pk in document.chunks.order_by("position").values_list("id", flat=True)]


def test_a_document_is_classified_into_a_saved_taxonomy_with_its_cited_passages(
    call, model, invoice_document, mail_taxonomy
):
    first = passages(invoice_document)[0]
    server = model(
        [
            reply(
                {"labels": [{"label": "invoice", "confidence": 0.94, "reason": "It bills.", "citations": [first]}]},
                expect={"user_text_contains": f"[{first}] Invoice INV-2041"},
            )
        ]
    )
    result = call("classify_document", document_id=invoice_document.pk, taxonomy=mail_taxonomy)
    assert result.error is None, result.content
    assert f"- invoice (confidence 0.94) [{first}]: It bills." in text(result)
    card = result.cards[0]
    assert card["type"] == "classification_result"
    assert card["taxonomy"] == {"name": "mail", "version": 1}
    assert card["document"] == {"id": invoice_document.pk, "title": "Invoice 2041"}
    quote = card["labels"][0]["citations"][0]
    assert quote["id"] == first and invoice_document.chunks.first().text.startswith(quote["text"].rstrip("…"))
    assert result.cost == pytest.approx(COST)
    assert "A customer is unhappy" in server.requests[0].messages[0]["content"][0]["text"]


def test_the_cost_is_charged_to_the_tool_the_tenant_and_the_user(call, model):
    model([reply({"labels": [{"label": "spam", "confidence": 0.9, "reason": "Ads.", "citations": ["s1"]}]})])
    assert call("classify_document", text="Buy cheap watches now!", labels=["spam", "ham"]).error is None
    rows = UsageLog.objects.filter(kind="tool").values_list("name", "tenant_id", "user_id", "cost_usd")
    assert [(n, t, u, round(c, 8)) for n, t, u, c in rows] == [("classify_document", TENANT, "u1", round(COST, 8))]


def test_a_reply_citing_a_passage_the_document_lacks_gets_one_repair_try(call, model):
    wrong = {"labels": [{"label": "spam", "confidence": 0.9, "reason": "Ads.", "citations": ["p999"]}]}
    right = {"labels": [{"label": "spam", "confidence": 0.8, "reason": "Ads.", "citations": ["s1"]}]}
    server = model([reply(wrong), reply(right, expect={"user_text_contains": "'p999' is not one of ['s1']"})])
    result = call("classify_document", text="Buy cheap watches now!", labels=["spam", "ham"])
    assert result.error is None, result.content
    assert result.cards[0]["labels"][0]["confidence"] == 0.8
    assert "its repair did" in result.content
    assert result.cost == pytest.approx(2 * COST)
    assert [m["role"] for m in server.requests[1].messages] == ["user", "assistant", "user"]


def test_two_unfitting_replies_end_in_an_err_that_names_the_problem_and_the_attempts_are_charged(call, model):
    twice = {"labels": [{"label": "invoice", "confidence": 0.9, "reason": "x", "citations": ["s1"]}]}
    model([reply(twice), reply(twice)])
    result = call("classify_document", text="Buy cheap watches now!", labels=["spam", "ham"])
    assert result.error is not None
    assert "did not fit the schema after one repair try" in result.content
    assert "at labels[0].label: 'invoice' is not one of ['spam', 'ham']" in result.content
    charged = UsageLog.objects.get(kind="tool")
    assert (charged.name, charged.success, round(charged.cost_usd, 8)) == (
        "classify_document",
        False,
        round(2 * COST, 8),
    )


def test_a_reply_that_is_not_json_is_sent_back_once(call, model):
    server = model([{"text": ["It is spam."], "usage": USAGE}, {"text": ["Still spam."], "usage": USAGE}])
    result = call("classify_document", text="Buy cheap watches now!", labels=["spam", "ham"])
    assert "the reply is not JSON" in result.content and result.error is not None
    assert "the reply is not JSON" in repair_text(server)


def test_fields_are_extracted_with_a_saved_schema_each_value_citing_its_passage(call, tool, model):
    assert tool("create_schema", {"name": "invoice", "fields": INVOICE_FIELDS}).error is None
    values = {"number": "INV-2041", "supplier": "Helios SA", "date": "2026-03-14", "total": 18450.0}
    cited = {"number": ["s1"], "supplier": ["s1"], "date": ["s1"], "total": ["s3"]}
    model([reply({"values": values, "citations": cited})])
    result = call("extract_document", text=INVOICE, title="Invoice 2041", schema="invoice")
    assert result.error is None, result.content
    card = result.cards[0]
    assert card["type"] == "extraction_result" and card["schema"] == {"name": "invoice", "version": 1}
    assert {f["name"]: f["value"] for f in card["fields"]} == values
    assert card["fields"][3]["citations"][0]["text"].startswith("Total due: 18,450.00 EUR")
    assert "- total: 18450.0 [s3]" in text(result)


def test_an_extracted_value_that_breaks_the_schema_or_cites_nothing_is_sent_back(call, tool, model):
    tool("create_schema", {"name": "invoice", "fields": INVOICE_FIELDS})
    bad = {"values": {"number": None, "supplier": "Helios SA", "date": None, "total": "a lot"}, "citations": {}}
    good = {
        "values": {"number": "INV-2041", "supplier": None, "date": None, "total": None},
        "citations": {"number": ["s1"]},
    }
    server = model([reply(bad), reply(good)])
    result = call("extract_document", text=INVOICE, schema="invoice")
    assert result.error is None, result.content
    repair = repair_text(server)
    assert "at values.number: None is not of type 'string'" in repair
    assert "at values.total" in repair


def test_a_value_without_a_citation_is_sent_back(call, model):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    server = model(
        [
            reply({"values": {"city": "Lyon"}, "citations": {}}),
            reply({"values": {"city": "Lyon"}, "citations": {"city": ["s2"]}}),
        ]
    )
    result = call("extract_document", text=INVOICE, json_schema=schema, instructions="Where the work was done")
    assert result.error is None, result.content
    assert "the value of 'city' cites no passage" in repair_text(server)
    assert "What to extract: Where the work was done" in server.requests[0].messages[0]["content"][0]["text"]


def test_a_json_schema_with_definitions_is_held_to_them(call, model):
    schema = {
        "$defs": {
            "money": {"type": "object", "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}}}
        },
        "type": "object",
        "properties": {"total": {"$ref": "#/$defs/money"}},
    }
    wrong = {"values": {"total": {"amount": "18k"}}, "citations": {"total": ["s3"]}}
    right = {"values": {"total": {"amount": 18450, "currency": "EUR"}}, "citations": {"total": ["s3"]}}
    server = model([reply(wrong), reply(right)])
    result = call("extract_document", text=INVOICE, json_schema=schema)
    assert result.error is None, result.content
    assert "at values.total.amount: '18k' is not of type 'number'" in repair_text(server)
    assert result.cards[0]["fields"][0]["value"] == {"amount": 18450, "currency": "EUR"}


def test_process_document_extracts_with_the_schema_the_chosen_label_names(call, model, invoice_document, mail_taxonomy):
    first, *_, last = passages(invoice_document)
    values = {"number": "INV-2041", "supplier": "Helios SA", "date": "2026-03-14", "total": 18450}
    model(
        [
            reply({"labels": [{"label": "invoice", "confidence": 0.9, "reason": "A bill.", "citations": [first]}]}),
            reply(
                {"values": values, "citations": {k: [last if k == "total" else first] for k in values}},
                expect={"system_contains": "The amount due"},
            ),
        ]
    )
    result = call("process_document", document_id=invoice_document.pk, taxonomy=mail_taxonomy)
    assert result.error is None, result.content
    assert [c["type"] for c in result.cards] == ["classification_result", "extraction_result"]
    assert result.cost == pytest.approx(2 * COST)
    assert "- total: 18450" in text(result)


def test_process_document_classifies_only_when_the_label_names_no_schema(call, model, mail_taxonomy):
    model([reply({"labels": [{"label": "complaint", "confidence": 0.7, "reason": "Angry.", "citations": ["s1"]}]})])
    result = call("process_document", text="Your panels broke twice. I want a refund.", taxonomy=mail_taxonomy)
    assert result.error is None
    assert [c["type"] for c in result.cards] == ["classification_result"]
    assert "label 'complaint' names no schema, so nothing was extracted" in result.content


def test_the_insight_role_has_its_own_model_when_it_has_a_row(call, model):
    from llm.scripted import ScriptedChatCompletionsServer

    chat = model([{"text": ["never asked"]}])
    answer = {"labels": [{"label": "ham", "confidence": 0.6, "reason": "Mail.", "citations": ["s1"]}]}
    with ScriptedChatCompletionsServer([{"text": [json.dumps(answer)]}]) as small:
        ModelConfig.objects.create(role="insight", provider="openai", model="small-reader", base_url=small.url)
        result = call("classify_document", text="Lunch on Friday?", labels=["spam", "ham"])
    assert result.error is None, result.content
    assert small.requests[0].body["model"] == "small-reader" and chat.requests == []
    assert small.failures == []
    chat.stop()


def test_without_a_model_the_call_ends_in_an_err_saying_how_to_configure_one(call):
    result = call("classify_document", text="Lunch on Friday?", labels=["spam", "ham"])
    assert result.error is not None
    assert "'insight' role" in result.content and "ModelConfig" in result.content


def test_saving_a_changed_schema_adds_a_version_and_saving_it_unchanged_does_not(tool):
    fields = [{"name": "number"}]
    assert "version 1 (saved)" in tool("create_schema", {"name": "invoice", "fields": fields}).content
    assert "version 1 (unchanged)" in tool("create_schema", {"name": "invoice", "fields": fields}).content
    changed = tool("create_schema", {"name": "invoice", "fields": [*fields, {"name": "total", "type": "number"}]})
    assert "version 2 (replaces version 1)" in changed.content
    assert list(InsightDefinition.objects.values_list("version", flat=True)) == [1, 2]


def test_an_invalid_json_schema_is_refused_naming_the_rule(tool):
    bad_type = tool(
        "create_schema", {"name": "x", "json_schema": {"type": "object", "properties": {"a": {"type": "text"}}}}
    )
    assert "not a valid JSON Schema at properties/a/type" in bad_type.content
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}
    assert "$ref may only point into #/$defs/" in tool("create_schema", {"name": "x", "json_schema": remote}).content
    no_fields = tool("create_schema", {"name": "x", "json_schema": {"type": "string"}})
    assert 'must be {"type": "object"' in no_fields.content
    assert InsightDefinition.objects.count() == 0


def test_a_taxonomy_naming_an_unknown_schema_or_a_label_twice_is_refused(tool):
    tool("create_schema", {"name": "invoice", "fields": [{"name": "number"}]})
    unknown = tool("create_taxonomy", {"name": "mail", "labels": [{"label": "a", "schema": "invoise"}, {"label": "b"}]})
    assert "there is no schema called 'invoise'" in unknown.content and "invoice" in unknown.content
    twice = tool("create_taxonomy", {"name": "mail", "labels": [{"label": "Spam"}, {"label": "spam"}]})
    assert "given more than once" in twice.content


def test_another_tenants_taxonomy_and_document_cannot_be_used(call, tool, invoice_document, mail_taxonomy):
    taxonomy = call("classify_document", tenant=OTHER_TENANT, text="Hello", taxonomy=mail_taxonomy)
    assert "there is no taxonomy called 'mail'" in taxonomy.content
    document = call("classify_document", tenant=OTHER_TENANT, document_id=invoice_document.pk, labels=["a", "b"])
    assert f"document_id {invoice_document.pk} is not one of your documents" in document.content


def test_a_call_naming_two_documents_or_none_gets_a_hint(call):
    both = call("classify_document", text="Hello", upload="a.pdf", labels=["a", "b"])
    assert "give exactly one of document_id, upload or text; got upload, text" in both.content
    assert "got none" in call("extract_document", json_schema={"type": "object"}).content

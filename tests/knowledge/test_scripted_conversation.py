"""The knowledge tools in a scripted conversation, through the dispatcher, and from the command line."""

import io

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.management import call_command
from pypdf import PdfReader

from conversations.dispatcher import dispatch_tool_calls
from conversations.models import ChatMessage, Conversation, Notification
from conversations.state import DispatchState
from conversations.turns import begin_turn, finish_turn
from datacatalog.models import GeneratedFile
from tests.conftest import OTHER_TENANT, TENANT
from tools.models import Chunk

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTS = [
    {"text": "The Brest wind park has 14 turbines and produced 60 GWh in 2025.", "title": "Wind park"},
    {
        "text": "<html><body><h1>Solar</h1><p>The Lyon solar farm produced 4.2 GWh in 2025.</p></body></html>",
        "title": "Solar farm",
        "format": "html",
    },
    {"text": "# Storage\n\nThe Nantes battery holds 30 MWh.", "title": "Storage", "format": "markdown"},
]


@pytest.fixture
def conversation():
    user = get_user_model().objects.create_user("ann", password="pw")
    return Conversation.objects.create(tenant_id=TENANT, user=user, title="Energy")


def turn(conversation, message, blocks, answer):
    runtime = begin_turn(conversation, user=conversation.user, user_message=message)
    state = DispatchState.for_conversation(conversation)
    try:
        results = async_to_sync(dispatch_tool_calls)(blocks, runtime, state)
    finally:
        state.cancel.release()
    return results, finish_turn(runtime, answer(results) if callable(answer) else answer)


def block(tool_name, n, **inputs):
    return {"id": f"toolu_{tool_name}_{n}", "name": tool_name, "input": inputs}


def index(conversation):
    """Two turns: on PostgreSQL, a corpus created by an inline call was not yet visible to a
    sequential call later in the same turn (see the report); one call per turn avoids it here."""
    turn(conversation, "Make a corpus.", [block("create_corpus", 1, name="energy")], "Created.")
    results, _ = turn(
        conversation,
        "Index.",
        [block("index_content", 2, corpus="energy", items=DOCUMENTS)],
        "Indexed three documents.",
    )
    assert results[0].result.error is None and "3 item(s)" in results[0].result.content


def test_index_three_documents_ask_and_get_a_cited_answer(conversation):
    index(conversation)
    wind = Chunk.objects.get(document__title="Wind park")
    results, message = turn(
        conversation,
        "How many turbines does the wind park have?",
        [block("search_documents", 3, query="number of turbines in the wind park", limit=2)],
        f"The Brest wind park has 14 turbines [p{wind.pk}]. It made 60 GWh in 2025 [p{wind.pk}, p999999].",
    )
    assert f"[p{wind.pk}]" in results[0].result.content
    [card] = [c for c in message.cards if c["type"] == "cited_answer"]
    assert card["claims"][0] == {"text": "The Brest wind park has 14 turbines.", "passages": [f"p{wind.pk}"]}
    assert card["passages"][0]["text"].startswith("The Brest wind park")
    assert card["sources"][0]["title"] == "Wind park" and card["unresolved"] == ["p999999"]
    assert not [c for c in message.cards if c["type"] == "document_passages"]
    assert ChatMessage.objects.filter(role="assistant").last().cards == message.cards


def test_an_answer_that_cites_nothing_gets_no_cited_answer_card(conversation):
    index(conversation)
    _, message = turn(conversation, "Turbines?", [block("search_documents", 3, query="turbines")], "I am not sure.")
    assert message.cards == []


def test_record_facts_then_recall_them_in_a_later_turn(conversation):
    turn(
        conversation,
        "Remember Helios.",
        [
            block(
                "record_fact",
                1,
                entity="Helios SA",
                entity_type="company",
                attribute="operates",
                value="Lyon solar farm",
            ),
            block("record_fact", 2, entity="Helios SA", attribute="employees", value=135),
        ],
        "Noted.",
    )
    results, _ = turn(
        conversation,
        "What do we know about Helios?",
        [block("recall_entities", 3, query="Helios SA")],
        "Helios operates the Lyon farm.",
    )
    content = results[0].result.content
    assert "employees=135" in content and "operates='Lyon solar farm'" in content
    from tools.models import Fact

    assert set(Fact.objects.values_list("conversation_id", "tool_call_id")) == {
        (conversation.pk, "toolu_record_fact_1"),
        (conversation.pk, "toolu_record_fact_2"),
    }


def test_generate_a_pdf_report_of_the_conversation(conversation, files_dir):
    index(conversation)
    results, message = turn(
        conversation, "Write me a PDF report.", [block("document_conversation", 3, format="pdf")], "Here is the report."
    )
    assert results[0].result.error is None, results[0].result.content
    generated = GeneratedFile.objects.get(conversation=conversation)
    assert generated.filename.endswith(".pdf") and generated.source_tool == "document_conversation"
    assert str(files_dir / TENANT / "generated") in generated.path
    pdf_text = "\n".join(page.extract_text() for page in PdfReader(generated.path).pages)
    assert "Index." in pdf_text and "index_content" in pdf_text and "Indexed three documents." in pdf_text
    [card] = message.cards
    assert card["type"] == "file_download" and card["file_id"] == generated.pk
    assert Notification.objects.filter(kind="export.ready", payload__file_id=generated.pk).exists()


@pytest.mark.parametrize("fmt", ["pdf", "docx", "markdown"])
def test_generate_document_writes_each_format(call, fmt, files_dir):
    sections = [
        {
            "heading": "Output",
            "paragraphs": ["Lyon — 4.2 GWh"],
            "bullets": ["wind", "solar"],
            "table": {"columns": ["site", "GWh"], "rows": [["Lyon", 4.2], ["Brest", 60]]},
        }
    ]
    result = call("generate_document", title="Energy 2025", format=fmt, sections=sections)
    assert result.error is None, result.content
    [export] = result.exports.values()
    with open(export["path"], "rb") as handle:
        data = handle.read()
    assert export["size_bytes"] == len(data) and export["path"].startswith(str(files_dir / TENANT))
    if fmt == "pdf":
        assert "Lyon - 4.2 GWh" in PdfReader(io.BytesIO(data)).pages[0].extract_text()
    elif fmt == "docx":
        from docx import Document

        assert "Lyon — 4.2 GWh" in [p.text for p in Document(io.BytesIO(data)).paragraphs]
    else:
        assert "| Lyon | 4.2 |" in data.decode()


def test_an_empty_document_is_a_hint(call):
    assert call("generate_document", title="Nothing").content.startswith("⚠ schema hint: the document would be empty")


def test_another_tenant_cannot_report_on_a_conversation(call, conversation):
    result = call("document_conversation", tenant=OTHER_TENANT, context={"conversation_id": conversation.pk})
    assert result.content.startswith("⚠ schema hint: there is no conversation")


def test_the_tools_work_from_call_tool(files_dir):
    out = io.StringIO()
    call_command("call_tool", "create_corpus", input='{"name": "cli"}', tenant=TENANT, stdout=out)
    call_command(
        "call_tool",
        "index_content",
        input='{"corpus": "cli", "items": [{"text": "Fourteen turbines in Brest."}]}',
        tenant=TENANT,
        stdout=out,
    )
    call_command("call_tool", "search_documents", input='{"query": "turbines"}', tenant=TENANT, stdout=out)
    call_command(
        "call_tool",
        "record_fact",
        input='{"entity": "Brest", "attribute": "turbines", "value": 14}',
        tenant=TENANT,
        stdout=out,
    )
    call_command(
        "call_tool",
        "generate_document",
        input='{"title": "CLI", "sections": [{"paragraphs": ["hi"]}]}',
        tenant=TENANT,
        stdout=out,
    )
    text = out.getvalue()
    assert "Created corpus 'cli'" in text and "Fourteen turbines in Brest." in text
    assert "Recorded Brest" in text and "Generated CLI.pdf" in text

"""build_co_occurrence: which terms or entities turn up together, in rows or passages.

Support tickets of a web shop: complaints about late delivery mention the courier,
refunds go with damaged goods. The counts are checked against the tickets by hand.
"""

from __future__ import annotations

import pandas as pd
import pytest

from datacatalog.store import ConversationCatalog
from tests.conftest import TENANT

pytestmark = pytest.mark.django_db(transaction=True)

TICKETS = [
    "Delivery was late again, the courier left no note.",
    "Late delivery: courier never rang the bell.",
    "The package arrived damaged and I want a refund.",
    "Refund please, the lamp was damaged in transit.",
    "Courier was friendly, delivery on time.",
    "Damaged box, refund requested, courier careless.",
    "Invoice address is wrong on my account.",
]


@pytest.fixture
def tickets(conversation):
    books = ConversationCatalog(TENANT, conversation.id)
    frame = pd.DataFrame({"ticket_id": range(1, len(TICKETS) + 1), "body": TICKETS, "channel": ["mail"] * len(TICKETS)})
    books.save("tickets", frame, source="upload")
    return books


def pair(books, a, b, name="co_occurrence"):
    pairs = books.load(name)
    return pairs[(pairs.term_a == a) & (pairs.term_b == b)].iloc[0]


def test_named_terms_are_counted_per_row_and_saved_as_pairs(tickets, in_conversation):
    result = in_conversation(
        "build_co_occurrence", dataset="tickets", columns=["body"], terms=["courier", "late", "refund", "damaged"]
    )
    assert result.ok, result.content
    assert pair(tickets, "courier", "late")["count"] == 2
    assert pair(tickets, "refund", "damaged")["count"] == 3
    pairs = tickets.load("co_occurrence")
    assert pairs[(pairs.term_a == "refund") & (pairs.term_b == "late")].empty, "never in one ticket"
    assert pair(tickets, "courier", "courier")["count"] == 4
    assert pair(tickets, "damaged", "refund")["jaccard"] == 1.0


def test_the_pairs_are_drawn_as_a_heatmap_chart_card(tickets, in_conversation):
    result = in_conversation("build_co_occurrence", dataset="tickets", terms=["courier", "late", "refund", "damaged"])
    chart, image = result.cards
    assert chart["type"] == "chart" and chart["dataset"] == "co_occurrence"
    assert chart["spec"]["mark"]["type"] == "rect" and chart["spec"]["encoding"]["color"]["field"] == "count"
    assert chart["spec"]["encoding"]["x"]["sort"][0] == "courier"
    assert image["type"] == "file_download"


def test_without_terms_the_most_frequent_words_are_used(tickets, in_conversation):
    result = in_conversation("build_co_occurrence", dataset="tickets", top_n=5, save_as="ticket_words")
    assert result.ok, result.content
    words = set(tickets.load("ticket_words").term_a)
    assert {"courier", "damaged", "refund", "delivery"} <= words and "the" not in words
    assert "saved as dataset 'ticket_words'" in result.content


def test_recorded_entities_are_matched_in_a_corpus_passage_by_passage(call, in_conversation, conversation):
    assert in_conversation("create_corpus", name="press").ok
    indexed = call(
        "index_content",
        corpus="press",
        items=[
            {"title": "Steel deal", "text": "Nordvik Steel signed a supply deal with Bergen Harbour this spring."},
            {"title": "Port works", "text": "Bergen Harbour expands its container quay; Kari Nordmann approved it."},
            {"title": "Budget", "text": "Kari Nordmann presented the budget. Nordvik Steel was not mentioned."},
        ],
    )
    assert indexed.ok, indexed.content
    for entity in ("Nordvik Steel", "Bergen Harbour", "Kari Nordmann", "Tromsø Airport"):
        assert call("record_fact", entity=entity, attribute="seen", value=True).ok
    result = in_conversation("build_co_occurrence", corpus="press", entities=True)
    assert result.ok, result.content
    books = ConversationCatalog(TENANT, conversation.id)
    assert pair(books, "Nordvik Steel", "Bergen Harbour")["count"] == 1
    assert pair(books, "Kari Nordmann", "Nordvik Steel")["count"] == 1
    assert "Tromsø Airport" not in set(books.load("co_occurrence").term_a)


def test_another_tenants_corpus_is_not_found(in_conversation):
    assert in_conversation("create_corpus", tenant="globex", name="secret").ok
    result = in_conversation("build_co_occurrence", corpus="secret", terms=["a", "b"])
    assert result.content.startswith("⚠ schema hint: corpus 'secret' does not exist")


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"dataset": "tickets", "columns": ["text"]}, "⚠ schema hint: columns: no column 'text'"),
        ({"dataset": "tickets", "terms": ["zebra", "giraffe"]}, "⚠ schema hint: terms: fewer than two"),
        ({"dataset": "tickets", "corpus": "press"}, "⚠ schema hint: corpus: pass either a corpus or a dataset"),
        ({"dataset": "tickets", "entities": True}, "⚠ schema hint: entities: the tenant has no recorded entities"),
    ],
)
def test_bad_input_is_a_hint_naming_the_field(tickets, in_conversation, inputs, expected):
    assert in_conversation("build_co_occurrence", **inputs).content.startswith(expected)


def test_a_colleagues_own_documents_in_the_corpus_are_never_read(in_conversation, conversation, django_user_model):
    """build_co_occurrence and discover_clusters read a corpus through the documents' access
    rule: the caller's own and the tenant's, never a colleague's (docs/access.md)."""
    ann = {"user_id": str(django_user_model.objects.create_user("ann-co").pk)}
    ben = {"user_id": str(django_user_model.objects.create_user("ben-co").pk)}
    assert in_conversation("create_corpus", name="notes").ok
    mine = [
        {"title": "Mine 1", "text": "Nordvik Steel and Bergen Harbour met on Monday."},
        {"title": "Mine 2", "text": "The quarterly budget was presented by the finance team."},
    ]
    theirs = [{"title": f"Ben {n}", "text": f"Nordvik Steel and Bergen Harbour, Zanzibar terms {n}."} for n in range(3)]
    assert in_conversation("index_content", context=ann, corpus="notes", items=mine).ok
    assert in_conversation("index_content", context=ben, corpus="notes", items=theirs).ok

    terms = ["Nordvik Steel", "Bergen Harbour", "Zanzibar"]
    counted = in_conversation("build_co_occurrence", context=ann, corpus="notes", terms=terms)
    clustered = in_conversation("discover_clusters", context=ann, corpus="notes", k=2)

    assert counted.ok, counted.content
    assert pair(ConversationCatalog(TENANT, conversation.id), "Nordvik Steel", "Bergen Harbour")["count"] == 1
    assert "Zanzibar" not in counted.content
    # Ann's two documents are all discover_clusters sees of the corpus (Ben's three would make five).
    assert clustered.content.startswith("⚠ schema hint: corpus 'notes' has 2 member(s)")

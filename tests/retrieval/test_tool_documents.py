"""How a tool becomes text: identifier splitting, schema walking, tokens."""

from __future__ import annotations

import pytest

from registry.retrieval import ToolDocument, split_identifier
from registry.retrieval.documents import query_passage
from registry.retrieval.tokens import tokenize

pytestmark = pytest.mark.filterwarnings("error")


def test_camel_and_snake_names_are_split_into_words() -> None:
    assert split_identifier("mcp_github_create_issue") == ["mcp", "github", "create", "issue"]
    assert split_identifier("createIssue") == ["create", "issue"]
    assert split_identifier("get-weibo-trending") == ["get", "weibo", "trending"]


def test_acronyms_and_digits_end_a_word() -> None:
    assert split_identifier("HTTPServerStart") == ["http", "server", "start"]
    assert split_identifier("sha256Digest") == ["sha", "256", "digest"]


def test_parameter_names_and_descriptions_feed_the_lexical_fields() -> None:
    document = ToolDocument(
        "t",
        "book_flight",
        "Book a flight.",
        {
            "type": "object",
            "properties": {
                "departureAirport": {"type": "string", "description": "IATA code of the origin"},
                "passengers": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"seatClass": {"description": "economy or business"}}},
                },
            },
        },
    )

    texts = [text for text, _weight in document.lexical_fields()]

    assert "departure airport" in texts
    assert "IATA code of the origin" in texts
    assert "passengers seat class" in texts
    assert "economy or business" in texts


def test_a_tool_without_schema_is_indexed_by_name_and_description() -> None:
    document = ToolDocument("t", "timeport", "A time-travel game.", None)

    assert document.parameters() == []
    assert [text for text, _ in document.lexical_fields()] == ["timeport", "A time-travel game."]


def test_the_embedded_passage_starts_with_the_name_words() -> None:
    document = ToolDocument("t", "get_stock_price", "Look up\n   a price.", None)

    assert document.embedding_text() == "get stock price: Look up a price."


def test_the_word_tool_in_a_name_is_left_out_of_the_embedded_passage() -> None:
    assert ToolDocument("t", "HousePurchasingTool", "Buy a house.").embedding_text() == "house purchasing: Buy a house."
    assert ToolDocument("t", "tool", "Does things.").embedding_text() == "tool: Does things."


def test_a_passage_title_keeps_the_word_tool() -> None:
    from tools.lib.hybrid import as_document

    document = as_document(7, "Power tool safety", "Wear goggles.")

    assert document.embedding_text() == "power tool safety: Wear goggles."


def test_a_querys_free_standing_numbers_are_not_embedded() -> None:
    assert query_passage("the top 100 holders at 11:00, up 5%") == "the top holders at , up"
    assert query_passage("GPT-4 notes as mp3 in /root/2024.pdf") == "GPT-4 notes as mp3 in /root/2024.pdf"
    assert query_passage("2024") == "2024"


def test_tokens_are_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("Creating the issues for my repositories") == ["creat", "issu", "repositori"]


def test_contractions_and_possessives_leave_no_stray_letters() -> None:
    assert tokenize("What's the cosine? I'm sure it doesn't matter") == ["cosin", "sure", "matter"]
    assert tokenize("Tasty’s recipes") == tokenize("Tasty recipes")


def test_chinese_text_is_indexed_as_characters_and_bigrams() -> None:
    assert tokenize("微博热搜") == ["微", "博", "热", "搜", "微博", "博热", "热搜"]

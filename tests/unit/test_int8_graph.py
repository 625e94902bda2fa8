"""The int8 first pass's model, written without the onnx package, is byte for byte what onnx.helper
builds for it, and onnxruntime computes exact integer products with it."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from server.stores.bounded_scores import _Q_LEVELS, _X_LEVELS
from server.stores.int8_graph import IR_VERSION, OPSET, QUESTIONS, matmul_integer_model


def onnx_helper_model(codes: np.ndarray) -> bytes:
    """The same model built with onnx.helper (how it was built before)."""
    rows, dim = codes.shape
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B", "zero"], ["Y"])],
        "template_codes",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [QUESTIONS, dim])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [QUESTIONS, rows])],
        [
            numpy_helper.from_array(np.ascontiguousarray(codes.T), "B"),
            numpy_helper.from_array(np.array(128, dtype=np.uint8), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return model.SerializeToString()


@pytest.mark.parametrize(("rows", "dim"), [(1, 1), (3, 2), (200, 384), (20_000, 384)])
def test_same_bytes_as_onnx_helper(rows: int, dim: int) -> None:
    """Shapes whose varints take one, two and three bytes (and a raw tensor of 7.7 MB)."""
    codes = np.random.default_rng(rows).integers(-127, 128, size=(rows, dim), dtype=np.int8)
    assert matmul_integer_model(codes) == onnx_helper_model(codes)


@pytest.mark.parametrize("questions", [1, 5])
def test_onnxruntime_runs_it_exactly(questions: int) -> None:
    """With the codes' ranges the store uses (7-bit template codes, questions within +-127 of 128); several
    questions (a batch of concurrent requests) share one run, each row what the question alone gets."""
    rng = np.random.default_rng(questions)
    codes = rng.integers(-_X_LEVELS, _X_LEVELS + 1, size=(500, 384), dtype=np.int8)
    session = ort.InferenceSession(matmul_integer_model(codes), providers=["CPUExecutionProvider"])
    asked = rng.integers(128 - _Q_LEVELS, 128 + _Q_LEVELS + 1, size=(questions, 384)).astype(np.uint8)
    got = session.run(None, {"A": asked})[0]
    expected = (asked.astype(np.int64) - 128) @ codes.T.astype(np.int64)
    assert got.dtype == np.int32 and got.shape == (questions, 500) and np.array_equal(got, expected)
    alone = np.vstack([session.run(None, {"A": q[None]})[0] for q in asked])
    assert np.array_equal(got, alone)


def test_refuses_what_is_not_int8_codes() -> None:
    with pytest.raises(ValueError, match="int8"):
        matmul_integer_model(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="int8"):
        matmul_integer_model(np.zeros(3, dtype=np.int8))

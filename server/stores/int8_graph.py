"""The int8 first pass's ONNX model (one MatMulInteger over the template codes), written as protobuf here.

The model is one node, two initializers and two tensor types, so it is encoded directly: importing the
`onnx` package to build it cost a warm start about 0.25 s of CPU, more than everything else the stacked
view's build does. The bytes are those `onnx.helper` gives for the same model (tests/unit/test_int8_graph.py).
"""

from __future__ import annotations

import numpy as np

_UINT8, _INT8, _INT32 = 2, 3, 6  # onnx TensorProto.DataType
IR_VERSION = 8
OPSET = 13
QUESTIONS = "questions"  # the first dimension of the question codes and the scores: any number of questions


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


Chunk = bytes | memoryview  # the codes go in as a view of their array: copied once, by the final join
Chunks = list[Chunk]  # a message's encoding in pieces, joined once at the end (the codes are megabytes)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _field(field: int, chunks: Chunks) -> Chunks:
    """A length-delimited field (a string, raw bytes or a nested message) holding `chunks`."""
    return [_varint(field << 3 | 2) + _varint(sum(len(c) for c in chunks)), *chunks]


def _str(field: int, value: str) -> Chunks:
    return _field(field, [value.encode()])


TRANSPOSE_ROWS = 4096  # rows of codes transposed per step: one step's source and target stay in cache


def _tensor(name: str, data_type: int, array: np.ndarray) -> Chunks:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9: little-endian, row-major). The data goes
    in as a view of the array (joined once, with the rest of the model), not as a copy of its own."""
    dims = b"".join(_int(1, d) for d in array.shape)
    raw = np.ascontiguousarray(array).data.cast("B")
    return [dims, _int(2, data_type), *_str(8, name), *_field(9, [raw])]


def transposed(codes: np.ndarray) -> np.ndarray:
    """`codes.T`, row-major, copied in row blocks: numpy's own transposing copy of 100,000 x 384 bytes walks
    the source a byte per cache line and took 3x as long."""
    out = np.empty(codes.shape[::-1], codes.dtype)
    for lo in range(0, len(codes), TRANSPOSE_ROWS):
        out[:, lo : lo + TRANSPOSE_ROWS] = codes[lo : lo + TRANSPOSE_ROWS].T
    return out


def _value_info(name: str, elem_type: int, shape: tuple[int | str, ...]) -> Chunks:
    """ValueInfoProto: name (1), type (2) -> TypeProto.tensor_type (1) -> elem_type (1), shape (2) -> dim (1)
    -> dim_value (1) or, for a dimension named instead of fixed, dim_param (2)."""
    dims = [piece for d in shape for piece in _field(1, _str(2, d) if isinstance(d, str) else [_int(1, d)])]
    tensor_type = [_int(1, elem_type), *_field(2, dims)]
    return [*_str(1, name), *_field(2, _field(1, tensor_type))]


def matmul_integer_model(codes: np.ndarray) -> bytes:
    """Y[n, rows] = (A[n, dim] - 128) @ codes.T: u8 codes of n questions (zero point 128) against s8 template
    codes; the concurrent questions of a batch read the template codes once."""
    if codes.dtype != np.int8 or codes.ndim != 2:
        raise ValueError("template codes must be a 2-D int8 array")
    rows, dim = codes.shape
    node = [*_str(1, "A"), *_str(1, "B"), *_str(1, "zero"), *_str(2, "Y"), *_str(4, "MatMulInteger")]
    graph = [
        *_field(1, node),
        *_str(2, "template_codes"),
        *_field(5, _tensor("B", _INT8, transposed(codes))),
        *_field(5, _tensor("zero", _UINT8, np.array(128, dtype=np.uint8))),
        *_field(11, _value_info("A", _UINT8, (QUESTIONS, dim))),
        *_field(12, _value_info("Y", _INT32, (QUESTIONS, rows))),
    ]
    opset = [*_str(1, ""), _int(2, OPSET)]
    return b"".join([_int(1, IR_VERSION), *_field(7, graph), *_field(8, opset)])

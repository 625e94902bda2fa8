"""Build the ONNX graph of a BERT sentence encoder straight from its safetensors weights.

Exporting ONNX normally needs torch, which this project must not depend on, so the encoder is
written out node by node. The graph takes `input_ids` and `attention_mask` (int64, batch x
seq) and returns `sentence_embedding` (float32, batch x hidden): pooling (mean over the mask, as in
all-MiniLM-L6-v2, or the [CLS] token, as the model folder's sentence-transformers config says:
model_folder.py) and L2 normalisation are part of the graph. It also
returns the last two layers' token states (`token_states`, `penultimate_states`, batch x seq x
hidden) for the intent model's token views (intent/token_views.py); they cost a copy, not compute.

The transformer layers use onnxruntime's fused CPU kernels (`com.microsoft` Attention,
SkipLayerNormalization, BiasGelu): on a 2-core machine they halve single-query latency
compared with the same maths spelled out in standard ONNX ops, because each layer is a few
large parallel steps instead of ~30 small ones. onnxruntime is the only runtime we target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MS = "com.microsoft"
TOKEN_OUTPUTS = ("token_states", "penultimate_states")


@dataclass(frozen=True)
class BertShape:
    layers: int = 6
    hidden: int = 384
    heads: int = 12
    intermediate: int = 1536
    max_positions: int = 512
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_config(cls, config: dict) -> BertShape:
        """Read the fields this builder supports and refuse what it cannot build."""
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported hidden_act {config.get('hidden_act')!r}")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        return cls(
            layers=int(config["num_hidden_layers"]),
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            intermediate=int(config["intermediate_size"]),
            max_positions=int(config["max_position_embeddings"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )


class _GraphWriter:
    """Accumulates nodes and initializers; every node gets a unique output name."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], domain: str = "", **attrs: Any) -> str:
        self._n += 1
        out = f"{op_type.lower()}_{self._n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"n{self._n}", domain=domain, **attrs))
        return out

    def matmul(self, x: str, weight: np.ndarray, name: str) -> str:
        """x @ W^T for a torch-layout (out, in) weight."""
        return self.op("MatMul", [x, self.const(name, weight.T.astype(np.float32))])


def _layer(g: _GraphWriter, x: str, mask: str, w: dict[str, np.ndarray], p: str, s: BertShape) -> str:
    """One encoder layer: self-attention, residual + LayerNorm, GELU feed-forward, residual + LayerNorm."""
    a = f"{p}.attention.self"
    qkv_w = np.concatenate([w[f"{a}.query.weight"], w[f"{a}.key.weight"], w[f"{a}.value.weight"]], axis=0)
    qkv_b = np.concatenate([w[f"{a}.query.bias"], w[f"{a}.key.bias"], w[f"{a}.value.bias"]])
    ctx = g.op(
        "Attention",
        [x, g.const(f"{a}.qkv.wt", qkv_w.T), g.const(f"{a}.qkv.b", qkv_b), mask],
        domain=MS,
        num_heads=s.heads,
    )

    o = f"{p}.attention.output"
    attn = g.matmul(ctx, w[f"{o}.dense.weight"], f"{o}.dense.wt")
    x = g.op(
        "SkipLayerNormalization",
        [
            attn,
            x,
            g.const(f"{o}.ln.gamma", w[f"{o}.LayerNorm.weight"]),
            g.const(f"{o}.ln.beta", w[f"{o}.LayerNorm.bias"]),
            g.const(f"{o}.dense.b", w[f"{o}.dense.bias"]),
        ],
        domain=MS,
        epsilon=s.layer_norm_eps,
    )

    inter = g.matmul(x, w[f"{p}.intermediate.dense.weight"], f"{p}.intermediate.wt")
    inter = g.op("BiasGelu", [inter, g.const(f"{p}.intermediate.b", w[f"{p}.intermediate.dense.bias"])], domain=MS)

    out = g.matmul(inter, w[f"{p}.output.dense.weight"], f"{p}.output.wt")
    return g.op(
        "SkipLayerNormalization",
        [
            out,
            x,
            g.const(f"{p}.output.ln.gamma", w[f"{p}.output.LayerNorm.weight"]),
            g.const(f"{p}.output.ln.beta", w[f"{p}.output.LayerNorm.bias"]),
            g.const(f"{p}.output.b", w[f"{p}.output.dense.bias"]),
        ],
        domain=MS,
        epsilon=s.layer_norm_eps,
    )


def _i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _pool(g: _GraphWriter, x: str, pooling: str) -> str:
    """Mean over real tokens (count clamped like sentence-transformers), or the first ([CLS]) token."""
    if pooling == "cls":  # initializers are at least 1-d: gather [0], then drop that axis
        first = g.op("Gather", [x, g.const("cls_index", _i64(0))], axis=1)
        return g.op("Squeeze", [first, g.const("cls_axis", _i64(1))])
    if pooling != "mean":
        raise ValueError(f"unsupported pooling {pooling!r}")
    mask3 = g.op("Unsqueeze", [g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT), g.const("axis2", _i64(2))])
    axis1 = g.const("axis1", _i64(1))
    summed = g.op("ReduceSum", [g.op("Mul", [x, mask3]), axis1], keepdims=0)
    counts = g.op(
        "Max", [g.op("ReduceSum", [mask3, axis1], keepdims=0), g.const("min_count", np.array(1e-9, dtype=np.float32))]
    )
    return g.op("Div", [summed, counts])


def build_sentence_encoder(weights: dict[str, np.ndarray], shape: BertShape, pooling: str = "mean") -> onnx.ModelProto:
    """Return the encoder + pooling (mean or CLS) + L2 norm as an ONNX model for onnxruntime."""
    w = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in weights.items()}
    g = _GraphWriter()

    # Embeddings: word + position + token type 0 (single-segment input), then LayerNorm.
    word = g.op("Gather", [g.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids"], axis=0)
    position_table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    seq_len = g.op("Slice", [g.op("Shape", ["input_ids"]), g.const("one", _i64(1)), g.const("two", _i64(2))])
    positions = g.op("Slice", [g.const("position_table", position_table), g.const("zero", _i64(0)), seq_len])
    x = g.op(
        "LayerNormalization",
        [
            g.op("Add", [word, positions]),
            g.const("embeddings.ln.gamma", w["embeddings.LayerNorm.weight"]),
            g.const("embeddings.ln.beta", w["embeddings.LayerNorm.bias"]),
        ],
        axis=-1,
        epsilon=shape.layer_norm_eps,
    )

    mask_i32 = g.op("Cast", ["attention_mask"], to=TensorProto.INT32)  # raw 0/1 mask for Attention
    for i in range(shape.layers):
        if i == shape.layers - 1:
            g.nodes.append(helper.make_node("Identity", [x], ["penultimate_states"], name="penultimate"))
        x = _layer(g, x, mask_i32, w, f"encoder.layer.{i}", shape)
    g.nodes.append(helper.make_node("Identity", [x], ["token_states"], name="last"))

    # L2 normalisation (clamped like sentence-transformers) always: routing compares cosines, and a
    # folder without a Normalize module has the same cosines (server/embedding/base.py: unit vectors).
    pooled = _pool(g, x, pooling)
    norm = g.op(
        "Max",
        [g.op("ReduceL2", [pooled], axes=[-1], keepdims=1), g.const("min_norm", np.array(1e-12, dtype=np.float32))],
    )
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"], name="normalise"))

    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in ("input_ids", "attention_mask")
    ]
    outputs = [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden])]
    outputs += [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", shape.hidden]) for n in TOKEN_OUTPUTS
    ]
    graph = helper.make_graph(g.nodes, "sentence_encoder", inputs, outputs, initializer=g.inits)
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)],
        producer_name="intent-router",
        ir_version=8,
    )

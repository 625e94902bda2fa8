"""The BERT sentence encoder's forward pass in jax.numpy, over the same weights the ONNX graph runs.

Training needs gradients, which onnxruntime's inference graph cannot give; torch would bring
multi-GB CUDA packages. This is the same maths as minilm_graph.py's graph (embeddings + LayerNorm,
self-attention, residual + LayerNorm, erf GELU feed-forward, residual + LayerNorm; mean or [CLS]
pooling; L2 norm), checked against onnxruntime to ~1e-5 (tests/unit/test_tune_forward.py), so the
weights trained here serve unchanged. Training passes a dropout rate and a random key: BERT's dropout
(embeddings, attention probabilities, both residual branches) as sentence-transformers trains with it,
a regulariser that matters with a few examples per template; without a key the pass is deterministic.
Only the tune command imports this module.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from server.embedding.minilm_graph import BertShape

Params = dict[str, Any]
MASKED = -1e9  # added to padded positions' attention logits (exp underflows to 0, as onnxruntime's mask)


def trainable_params(weights: dict[str, np.ndarray]) -> Params:
    """The float tensors of a safetensors file, without the `bert.` prefix some folders carry, as jax
    arrays (position_ids and other integer buffers are not parameters)."""
    return {
        k.removeprefix("bert."): jnp.asarray(v, dtype=jnp.float32)
        for k, v in weights.items()
        if np.issubdtype(v.dtype, np.floating) and not k.removeprefix("bert.").startswith("pooler.")
    }


def _layer_norm(x: jax.Array, gamma: jax.Array, beta: jax.Array, eps: float) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * gamma + beta


def _dense(x: jax.Array, p: Params, name: str) -> jax.Array:
    """x @ W^T + b for a torch-layout (out, in) weight."""
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


class Dropout:
    """BERT's dropout at `rate`, a fresh mask per call from `key` (no key or rate 0: the identity)."""

    def __init__(self, rate: float, key: jax.Array | None) -> None:
        self._rate, self._key = rate, key

    def __call__(self, x: jax.Array) -> jax.Array:
        if self._key is None or self._rate <= 0.0:
            return x
        self._key, key = jax.random.split(self._key)
        keep = jax.random.bernoulli(key, 1.0 - self._rate, x.shape)
        return jnp.where(keep, x / (1.0 - self._rate), 0.0)


def _layer(x: jax.Array, bias: jax.Array, p: Params, i: int, s: BertShape, drop: Dropout) -> jax.Array:
    pre = f"encoder.layer.{i}"
    batch, seq, hidden = x.shape
    head = hidden // s.heads

    def heads(t: jax.Array) -> jax.Array:
        return t.reshape(batch, seq, s.heads, head).transpose(0, 2, 1, 3)

    a = f"{pre}.attention.self"
    q, k, v = (heads(_dense(x, p, f"{a}.{n}")) for n in ("query", "key", "value"))
    logits = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + bias
    ctx = (drop(jax.nn.softmax(logits, axis=-1)) @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    o = f"{pre}.attention.output"
    x = _layer_norm(
        drop(_dense(ctx, p, f"{o}.dense")) + x, p[f"{o}.LayerNorm.weight"], p[f"{o}.LayerNorm.bias"], s.layer_norm_eps
    )
    inter = jax.nn.gelu(_dense(x, p, f"{pre}.intermediate.dense"), approximate=False)
    out = drop(_dense(inter, p, f"{pre}.output.dense")) + x
    return _layer_norm(out, p[f"{pre}.output.LayerNorm.weight"], p[f"{pre}.output.LayerNorm.bias"], s.layer_norm_eps)


def encode(
    p: Params,
    input_ids: jax.Array,
    mask: jax.Array,
    shape: BertShape,
    pooling: str = "mean",
    dropout: float = 0.0,
    key: jax.Array | None = None,
) -> jax.Array:
    """Unit sentence vectors (batch x hidden) for int token ids and a 0/1 mask (batch x seq); with a
    `key`, `dropout` applies where BERT training applies it."""
    drop = Dropout(dropout, key)
    seq = input_ids.shape[1]
    x = p["embeddings.word_embeddings.weight"][input_ids]
    x = x + p["embeddings.position_embeddings.weight"][:seq] + p["embeddings.token_type_embeddings.weight"][0]
    x = drop(_layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"], shape.layer_norm_eps))
    maskf = mask.astype(jnp.float32)
    bias = ((1.0 - maskf) * MASKED)[:, None, None, :]
    for i in range(shape.layers):
        x = _layer(x, bias, p, i, shape, drop)
    if pooling == "cls":
        pooled = x[:, 0]
    else:
        pooled = (x * maskf[:, :, None]).sum(1) / jnp.maximum(maskf.sum(1, keepdims=True), 1e-9)
    return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

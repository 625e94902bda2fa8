"""Contrastive tuning of a BERT sentence encoder on the templates' texts, on CPU with JAX.

Loss: in-batch negatives (MultipleNegativesRanking, as SetFit / sentence-transformers): each anchor's
scaled cosines to every positive of the batch, cross-entropy towards its own template's positive. With
out-of-scope anchors (anchors.py) a margin term is added: each out-of-scope text's cosine to any template
text of the batch must stay `anchor_margin` below that text's cosine to its own template's other text
(a hinge on the worst template, averaged over the out-of-scope texts, times `anchor_weight`). Without
them the loss is the plain one.
AdamW with linear warm-up and decay. The step count adapts to the time budget: after the first
steps (which include JAX's compilation) the remaining budget decides how many more fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from server.embedding.minilm_graph import BertShape
from server.tune.bert_jax import Params, encode
from server.tune.pairs import batch_indices, pair_texts
from server.tune_settings import TuneConfig

EMBED_BATCH = 64
WIDTHS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)  # padded lengths: one compilation per width used
_CONFIG_DEFAULTS = TuneConfig()  # the recipe's knobs have their defaults in the config model


@dataclass(frozen=True)
class TuneSettings:
    steps: int = 300
    batch_templates: int = 32
    learning_rate: float = 3e-5
    scale: float = 20.0
    weight_decay: float = 0.01
    warmup: float = 0.1  # share of the steps with a rising learning rate
    hard_negative_group: int = _CONFIG_DEFAULTS.hard_negative_group  # the tune: block's knobs (tune_settings.py)
    dropout: float = _CONFIG_DEFAULTS.dropout
    stock_share: float = _CONFIG_DEFAULTS.stock_share
    max_seconds: float = 600.0
    seed: int = 0
    max_train_tokens: int = 64  # training pairs are cut here (cost grows with the width; serving is not cut)
    write_verb_anchors: bool = _CONFIG_DEFAULTS.write_verb_anchors
    anchors_per_template: int = _CONFIG_DEFAULTS.anchors_per_template
    anchors_per_batch: int = _CONFIG_DEFAULTS.anchors_per_batch
    anchor_weight: float = _CONFIG_DEFAULTS.anchor_weight
    anchor_margin: float = _CONFIG_DEFAULTS.anchor_margin

    def dump(self) -> dict[str, Any]:
        return dict(self.__dict__)


def steps_that_fit(step: int, seconds: float, first_step_seconds: float, s: TuneSettings) -> int:
    """The steps the time budget allows, planned after step `step` (0-based, > 0) from the mean speed since
    the first step (mostly compilation); all of `s.steps` whenever they fit. Every re-plan starts afresh, so
    a stall (the machine busy, the process paused) shortens the plan only while it still weighs on the mean."""
    per_step = (seconds - first_step_seconds) / step
    fits = step + 1 + int((s.max_seconds - seconds) / max(per_step, 1e-6))
    return s.steps if fits >= s.steps else max(step + 1, fits)


@dataclass
class TuneLog:
    steps: int = 0
    planned_steps: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # this process's CPU time while training (the wall time depends on the machine's load)
    first_loss: float | None = None
    last_loss: float | None = None
    losses: list[float] = field(default_factory=list)
    stopped_by: str = "steps"
    first_step_seconds: float = 0.0  # mostly compilation: left out of the per-step estimate


class Tokens:
    """Token ids padded to a few fixed widths (each width compiles once)."""

    def __init__(self, tokenizer: Any, max_tokens: int) -> None:
        self._tok = tokenizer
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_tokens)
        self._max = max_tokens

    def __call__(self, texts: Sequence[str], cut: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Ids and mask, padded to the next width; `cut` shortens longer texts (keeping the final [SEP])."""
        ids = [e.ids for e in self._tok.encode_batch(list(texts))]
        if cut is not None:
            ids = [i if len(i) <= cut else [*i[: cut - 1], i[-1]] for i in ids]
        longest = max(len(i) for i in ids)
        width = next((w for w in WIDTHS if w >= longest), longest)
        out = np.zeros((len(ids), width), dtype=np.int32)
        mask = np.zeros((len(ids), width), dtype=np.int32)
        for row, i in enumerate(ids):
            out[row, : len(i)] = i
            mask[row, : len(i)] = 1
        return out, mask


def embed(params: Params, tokens: Tokens, texts: Sequence[str], shape: BertShape, pooling: str) -> np.ndarray:
    """Unit vectors of `texts` with the current weights, in batches of 64 (no gradients; the last batch
    padded with empty texts, so that every batch of one width reuses one compilation)."""
    run = _encoder(shape, pooling)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths together: less padding
    out = np.zeros((len(texts), shape.hidden), dtype=np.float32)
    for start in range(0, len(order), EMBED_BATCH):
        rows = order[start : start + EMBED_BATCH]
        chunk = [texts[i] for i in rows]
        ids, mask = tokens(chunk + [""] * (EMBED_BATCH - len(chunk)))
        out[rows] = np.asarray(run(params, ids, mask))[: len(chunk)]
    return out


_ENCODERS: dict[tuple[BertShape, str], Callable[..., Any]] = {}


def _encoder(shape: BertShape, pooling: str) -> Callable[..., Any]:
    key = (shape, pooling)
    if key not in _ENCODERS:
        _ENCODERS[key] = jax.jit(lambda p, ids, mask: encode(p, ids, mask, shape, pooling))
    return _ENCODERS[key]


def _loss(
    p: Params,
    ids: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    shape: BertShape,
    pooling: str,
    s: TuneSettings,
    outside: int,
) -> jax.Array:
    """Rows: the pairs' anchors, then their positives, then `outside` out-of-scope texts (one forward pass)."""
    vectors = encode(p, ids, mask, shape, pooling, s.dropout, key)
    half = (vectors.shape[0] - outside) // 2
    anchors, positives = vectors[:half], vectors[half : 2 * half]
    logits = s.scale * anchors @ positives.T
    loss = -jnp.mean(jnp.diagonal(jax.nn.log_softmax(logits, axis=-1)))
    if outside == 0:
        return loss
    oos = vectors[2 * half :]
    own = jnp.sum(anchors * positives, axis=-1)  # each template's own pair: the cosine to stay below
    nearest = jnp.maximum(oos @ anchors.T, oos @ positives.T)
    excess = jax.nn.relu(nearest - own[None, :] + s.anchor_margin).max(axis=1)
    return loss + s.anchor_weight * jnp.mean(excess)


def _step_fn(shape: BertShape, pooling: str, s: TuneSettings, outside: int) -> Callable[..., Any]:
    """One AdamW step (decoupled weight decay, not on biases and LayerNorm), compiled per input width."""
    b1, b2, eps = 0.9, 0.999, 1e-6
    grad = jax.value_and_grad(_loss)

    def step(p: Params, m: Params, v: Params, t: jax.Array, lr: jax.Array, ids: Any, mask: Any, key: Any) -> Any:
        loss, g = grad(p, ids, mask, key, shape, pooling, s, outside)
        m = jax.tree.map(lambda mi, gi: b1 * mi + (1 - b1) * gi, m, g)
        v = jax.tree.map(lambda vi, gi: b2 * vi + (1 - b2) * gi * gi, v, g)
        c1, c2 = 1 - b1**t, 1 - b2**t

        def update(name: str, w: jax.Array, mi: jax.Array, vi: jax.Array) -> jax.Array:
            decay = 0.0 if name.endswith("bias") or "LayerNorm" in name else s.weight_decay
            return w - lr * ((mi / c1) / (jnp.sqrt(vi / c2) + eps) + decay * w)

        p = {k: update(k, p[k], m[k], v[k]) for k in p}
        return p, m, v, loss

    return jax.jit(step, donate_argnums=(0, 1, 2))


def learning_rate(step: int, total: int, s: TuneSettings) -> float:
    warm = max(1, int(s.warmup * total))
    if step < warm:
        return s.learning_rate * (step + 1) / warm
    return s.learning_rate * max(0.0, (total - step) / max(1, total - warm))


def tune(
    params: Params,
    texts: Sequence[Sequence[str]],
    neighbours: np.ndarray,
    tokens: Tokens,
    shape: BertShape,
    pooling: str,
    s: TuneSettings,
    progress: Callable[[TuneLog], None],
    out_of_scope: Callable[[list[int]], list[str]] | None = None,
) -> tuple[Params, TuneLog]:
    """Train `params` on pairs of `texts` for s.steps steps or until s.max_seconds have passed;
    `out_of_scope` gives a batch of templates its out-of-scope texts (always as many; None: no margin term)."""
    rng = np.random.default_rng(s.seed)
    keys = jax.random.split(jax.random.PRNGKey(s.seed), s.steps)  # one dropout key per step
    outside = s.anchors_per_batch if out_of_scope is not None and s.anchor_weight > 0 else 0
    step_fn = _step_fn(shape, pooling, s, outside)
    p = dict(params)
    m = {k: jnp.zeros_like(w) for k, w in p.items()}
    v = {k: jnp.zeros_like(w) for k, w in p.items()}
    log = TuneLog(planned_steps=s.steps)
    started, cpu_started = time.perf_counter(), time.process_time()
    batch_iter = batch_indices(texts, neighbours, s.batch_templates, s.hard_negative_group, rng)
    for step in range(s.steps):
        if step >= log.planned_steps:
            break
        batch = next(batch_iter)
        anchors, positives = pair_texts(texts, batch, rng)
        oos = out_of_scope(batch) if outside and out_of_scope is not None else []
        lr = learning_rate(step, log.planned_steps, s)
        ids, mask = tokens([*anchors, *positives, *oos], s.max_train_tokens)
        p, m, v, loss = step_fn(p, m, v, jnp.float32(step + 1), jnp.float32(lr), ids, mask, keys[step])
        value = float(loss)
        log.steps, log.seconds = step + 1, time.perf_counter() - started
        log.cpu_seconds = time.process_time() - cpu_started
        if log.first_loss is None:
            log.first_loss, log.first_step_seconds = value, log.seconds
        log.last_loss = value
        log.losses.append(round(value, 4))
        if step == 4 or (step > 4 and step % 20 == 0):  # re-plan from the measured speed
            log.planned_steps = steps_that_fit(step, log.seconds, log.first_step_seconds, s)
            log.stopped_by = "steps" if log.planned_steps == s.steps else "max_seconds"
        if log.seconds >= s.max_seconds:
            log.stopped_by = "max_seconds"
            break
        progress(log)
    progress(log)
    return p, log

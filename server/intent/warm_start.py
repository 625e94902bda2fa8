"""Refitting a few columns of a fitted softmax model (an edit of a few templates), the others fixed.

A softmax regression's column per template depends on all the others only through the normaliser. When
a few templates change, their columns are fitted again, warm-started from their old weights (zeros for a
new template), against the fixed logsumexp of every other column on a pool of rows: the changed templates'
rows and a sample of the others'. The cost is that of the changed columns (plus one product of the pool
with the fixed ones), not of the model; the next full fit fits everything together again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .fit_control import check


def logsumexp(z: np.ndarray) -> np.ndarray:
    """Per row; -inf for a row of -inf only."""
    top = z.max(1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return (safe + np.log(np.exp(z - safe[:, None]).sum(1))).astype(np.float32)


def carried_columns(w: np.ndarray, b: np.ndarray, positions: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """The columns for a new template list: template i's old column `positions[i]` (float32 copies), zeros
    and the old biases' median for a new one (None). An edit keeps the list: one contiguous copy, no gather
    (the lexical weights reach tens of MB)."""
    keep = np.array([-1 if p is None else p for p in positions], np.int64)
    if len(keep) == w.shape[1] and np.array_equal(keep, np.arange(len(keep))):
        return w.astype(np.float32, copy=True), b.astype(np.float32, copy=True)
    old = keep >= 0
    new_w = np.zeros((w.shape[0], len(keep)), np.float32)
    new_w[:, old] = w[:, keep[old]]
    new_b = np.full(len(keep), np.median(b) if len(b) else 0.0, np.float32)
    new_b[old] = b[keep[old]]
    return new_w, new_b


def adam_step(
    w: np.ndarray,
    mw: np.ndarray,
    vw: np.ndarray,
    wu: np.ndarray,
    used: np.ndarray,
    gw: np.ndarray,
    b: np.ndarray,
    mb: np.ndarray,
    vb: np.ndarray,
    gb: np.ndarray,
    t: int,
    learning_rate: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One Adam step (t counts from 1) on the rows `used` of `w` (`wu` = their values before the step; the
    other rows and their moments stay as they are) and on `b`, both in place; returns b's new moments."""
    c1, c2 = 1 - 0.9**t, 1 - 0.999**t
    m = 0.9 * mw[used] + 0.1 * gw
    v = 0.999 * vw[used] + 0.001 * gw * gw
    mw[used], vw[used] = m, v
    w[used] = wu - learning_rate * (m / c1) / (np.sqrt(v / c2) + 1e-8)
    mb = 0.9 * mb + 0.1 * gb
    vb = 0.999 * vb + 0.001 * gb * gb
    b -= learning_rate * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return mb, vb


def fit_columns(
    x: np.ndarray,
    y: np.ndarray,
    rest: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    positives: int,
    *,
    steps: int,
    batch: int,
    learning_rate: float,
    cancelled: Callable[[], bool],
) -> tuple[np.ndarray, np.ndarray]:
    """Mini-batch Adam on the columns `w`, `b` only (rows of `w`: the features of the dense rows `x`):
    softmax over them plus one fixed logit per row (`rest`), label `y` (len(b): one of the fixed columns).
    Each batch holds up to half a batch of the first `positives` rows (the changed templates' rows) and
    sampled other rows; as in the cold fits, only the features a batch uses take a step."""
    w, b = w.astype(np.float32), b.astype(np.float32)
    mw, vw, mb, vb = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    rng = np.random.default_rng(1)
    negatives = np.arange(positives, len(x))
    take_pos = min(max(batch // 2, batch - len(negatives)), positives)
    whole = len(x) <= batch  # every row in every step: the batch is built once
    if whole:
        rows = np.arange(len(x))
        used = np.flatnonzero(x.any(0))
        part = x if len(used) == x.shape[1] else x[:, used]
    for t in range(1, steps + 1):
        check(cancelled)
        if not whole:
            pos = rng.choice(positives, take_pos, replace=False) if take_pos < positives else np.arange(positives)
            neg = rng.choice(negatives, min(batch - len(pos), len(negatives)), replace=False)
            rows = np.concatenate([pos, neg]).astype(np.int64)
            part = x[rows]
            used = np.flatnonzero(part.any(0))
            if len(used) < x.shape[1]:
                part = part[:, used]
        wu = w[used]
        z = np.hstack([part @ wu + b, rest[rows, None]])
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(rows)), y[rows]] -= 1.0
        p = p[:, :-1] / len(rows)  # the fixed column takes no step
        gw, gb = part.T @ p, p.sum(0)
        mb, vb = adam_step(w, mw, vw, wu, used, gw, b, mb, vb, gb, t, learning_rate)
    return w, b

"""The dense multinomial logistic regression and the score arithmetic that the intent model and its token
views share (centred vectors normalised, per-question z-scores)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .fit_control import check, never

# embedding regression: nearly unregularised, early-stopped (larger L2 or more steps: no gain)
L2 = 1e-5
STEPS = 100
LEARNING_RATE = 0.3
FIT_BATCH = 4096  # rows per step (all of them when fewer): bounds a step's cost at thousands of templates


def normalise(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def standardise(s: np.ndarray) -> np.ndarray:
    """Per-question z-score (along the last axis: one row per question); a flat score (spread at
    float-noise level) carries no ranking and gives 0."""
    n = s.shape[-1]
    # np.mean and np.std's arithmetic (float32 sums, then / n) without their Python-level wrappers: the
    # request path calls this on a row or two of scores, where the wrappers cost more than the sums
    centred = s - np.add.reduce(s, axis=-1, keepdims=True) / n
    spread = np.sqrt(np.add.reduce(centred * centred, axis=-1, keepdims=True) / n)
    flat = spread <= 1e-6
    return np.where(flat, 0.0, centred / np.where(flat, 1.0, spread))


def fit_softmax_regression(
    x: np.ndarray,
    y: np.ndarray,
    classes: int,
    cancelled: Callable[[], bool] = never,
    batch: int = FIT_BATCH,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression, Adam from zero weights, L2 on W: full-batch up to `batch` rows,
    else a fresh sample of `batch` rows per step (the cost of a step: batch x d x classes, not examples x
    classes; on BANKING77 with all examples, 4,096-row batches score as the full batch did)."""
    n, d = x.shape
    w = np.zeros((d, classes), np.float32)
    b = np.zeros(classes, np.float32)
    mw, vw, mb, vb = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    rng = np.random.default_rng(0)
    for t in range(1, STEPS + 1):
        check(cancelled)
        if n > batch:
            rows = rng.choice(n, batch, replace=False)
            xb, yb = x[rows], y[rows]
        else:
            xb, yb = x, y
        z = xb @ w + b
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(xb)), yb] -= 1.0
        p /= len(xb)
        gw = xb.T @ p + L2 * w
        gb = p.sum(0)
        mw = 0.9 * mw + 0.1 * gw
        vw = 0.999 * vw + 0.001 * gw * gw
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        w -= LEARNING_RATE * (mw / c1) / (np.sqrt(vw / c2) + 1e-8)
        b -= LEARNING_RATE * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return w, b

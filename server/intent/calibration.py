"""Embedding scores on one scale across models.

Raw cosines of different models are not comparable: an anisotropic model scores every pair 0.7-0.9,
MiniLM scores a right paraphrase 0.6. Each model gets a monotone map of its cosines to 0..1, fitted
on its own templates: for every example, its best cosine to another example of the SAME template is
a right match, its best cosine to an example of any OTHER template a wrong one; a logistic curve
through those two distributions says how likely a cosine of that model is a right match. Fitted when
the composite starts (off the request path) and applied to the embedding score before ranking and
combination.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_VECTORS = 4000  # a larger store is sampled (fixed seed): the fit needs distributions, not every pair
ROWS_PER_BLOCK = 512  # similarity rows computed at once (memory stays O(block x vectors))
L2 = 1e-3  # keeps the slope finite when right and wrong matches separate perfectly


@dataclass(frozen=True)
class ScoreCalibration:
    model_id: str
    slope: float  # > 0: the map is increasing, so each model's own ranking is kept
    intercept: float
    right: int  # pairs it was fitted on
    wrong: int

    def apply(self, cosine: float) -> float:
        z = self.slope * cosine + self.intercept
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def midpoint(self) -> float:
        """The cosine this model maps to 0.5."""
        return -self.intercept / self.slope

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model_id,
            "slope": round(self.slope, 4),
            "intercept": round(self.intercept, 4),
            "cosine_at_0_5": round(self.midpoint(), 4),
            "right_pairs": self.right,
            "wrong_pairs": self.wrong,
        }


def nearest_pairs(groups: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """For every vector of a group with at least two vectors: its best cosine to another vector of its
    own group, and its best cosine to a vector of any other group."""
    sizes = [len(g) for g in groups]
    if len(groups) < 2 or max(sizes, default=0) < 2:
        return np.empty(0), np.empty(0)
    matrix = np.vstack([np.asarray(g, dtype=np.float32) for g in groups])
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    labels = np.repeat(np.arange(len(groups)), sizes)
    if len(matrix) > MAX_VECTORS:
        keep = np.sort(np.random.default_rng(0).choice(len(matrix), MAX_VECTORS, replace=False))
        matrix, labels = matrix[keep], labels[keep]
    same_best, other_best = [], []
    for start in range(0, len(matrix), ROWS_PER_BLOCK):
        block = matrix[start : start + ROWS_PER_BLOCK] @ matrix.T
        rows = np.arange(block.shape[0])
        block[rows, rows + start] = -np.inf  # not itself
        same = labels[start : start + ROWS_PER_BLOCK, None] == labels[None, :]
        same_best.append(np.where(same, block, -np.inf).max(axis=1))
        other_best.append(np.where(same, -np.inf, block).max(axis=1))
    right, wrong = np.concatenate(same_best), np.concatenate(other_best)
    usable = np.isfinite(right) & np.isfinite(wrong)
    return right[usable].astype(float), wrong[usable].astype(float)


def fit(model_id: str, groups: Sequence[np.ndarray]) -> ScoreCalibration | None:
    """A logistic map of this model's cosines (right and wrong weighted equally), or None when the
    templates give too little to fit or the model does not score right matches higher."""
    right, wrong = nearest_pairs(groups)
    if len(right) < 2:
        return None
    x = np.concatenate([right, wrong])
    y = np.concatenate([np.ones(len(right)), np.zeros(len(wrong))])
    w = np.concatenate([np.full(len(right), 0.5 / len(right)), np.full(len(wrong), 0.5 / len(wrong))])
    centre, scale = float(x.mean()), float(x.std()) or 1.0
    features = np.stack([(x - centre) / scale, np.ones_like(x)], axis=1)
    theta = np.zeros(2)
    for _ in range(50):  # Newton steps on the weighted, slightly regularised log-loss
        p = 1.0 / (1.0 + np.exp(-(features @ theta)))
        grad = features.T @ (w * (p - y)) + L2 * np.array([theta[0], 0.0])
        hess = (features * (w * p * (1 - p))[:, None]).T @ features + L2 * np.diag([1.0, 0.0]) + 1e-9 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    slope = float(theta[0]) / scale
    if not slope > 0:
        return None
    return ScoreCalibration(model_id, slope, float(theta[1]) - slope * centre, len(right), len(wrong))


def template_vectors(source: Any) -> list[np.ndarray]:
    """Each template's vectors as the store holds them (description + examples), embedded again
    (from the embedding cache) for stores that do not hand vectors out."""
    store = getattr(source, "store", None)
    out = []
    for template in source.templates.values():
        vectors = None
        if store is not None and hasattr(store, "vectors_of"):
            try:
                vectors = store.vectors_of(template.id)
            except KeyError:
                vectors = None
        if vectors is None:
            vectors = source.embedder.embed_sync(template.embedding_texts())
        out.append(np.asarray(vectors))
    return out


def fit_per_model(sources: Sequence[Any]) -> dict[str, ScoreCalibration | None]:
    """One calibration per embedding model, fitted on the templates of every source that uses it."""
    by_model: dict[str, list[np.ndarray]] = {}
    for source in sources:
        by_model.setdefault(source.embedder.model_id, []).extend(template_vectors(source))
    return {model: fit(model, groups) for model, groups in by_model.items()}

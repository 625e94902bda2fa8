"""Token views: two more looks at each text from the encoder pass that embedded it, for the intent model.

The sentence embedding weighs every token alike. With few examples per template, two other poolings
of the same forward pass add signal. Validation on held-out BANKING77 train rows (k=8, 3 seeds x
3,000 rows, never test): intent model 83.87 -> 84.39 top-1 with both views (each alone ~+0.3); at
~130 examples per template they cost 0.1-0.2 points, so the intent model uses them only up to
MAX_EXAMPLES_PER_TEMPLATE on average (and MAX_TEXTS in all, for the fit's sake).
- SIF pooling of the last layer: token weight a / (a + p), p the token's frequency in the templates'
  own examples, so words every template uses ("card", "my", the special tokens) count less than the
  words that tell templates apart. It feeds a regression and a max-cosine kNN, like the sentence view.
- Max pooling of the penultimate layer over the real tokens (not [CLS]/[SEP]): a regression.
Measured and dropped: mean/max/CLS pooling of other layers (each +0.0 to +0.3), ColBERT-style late
interaction between question and example tokens (no gain), a fixed stop-word list instead of SIF
weights (+0.3 with the max view, against +0.5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..embedding.base import TokenViews
from ..recent import Recent
from .softmax_regression import fit_softmax_regression, normalise, standardise

SIF_A = 3e-3  # 1e-3..3e-3 within 0.05 points on validation
MAX_EXAMPLES_PER_TEMPLATE = 32
_POOL_CHUNK = 256  # texts pooled per call in a fit (their token states are concatenated)
# the fit runs the encoder over every text again (~3 ms each on two cores): at most ~15 s
MAX_TEXTS = 5000
# fused contribution = SIF_WEIGHT * (z(sif regression) + SIF_KNN * z(sif kNN)) + MAX_WEIGHT * z(max regression)
SIF_WEIGHT = 0.5
SIF_KNN = 0.5
MAX_WEIGHT = 0.5
# questions whose pooled views a fitted model keeps (~3 KB each): a question asked again needs no forward pass
POOLED_QUESTIONS = 4096


def worth_fitting(templates: int, examples: int) -> bool:
    """Views help with few examples per template, and their fit cost grows with the texts."""
    return examples <= MAX_EXAMPLES_PER_TEMPLATE * templates and examples + templates <= MAX_TEXTS


def max_pool(views: TokenViews) -> np.ndarray:
    """The maximum of the penultimate layer over the real tokens (all of them when the text has no more
    than [CLS] and [SEP])."""
    states = views.penultimate[1:-1] if len(views.penultimate) > 2 else views.penultimate
    return states.max(0)


def max_pool_many(views: Sequence[TokenViews]) -> np.ndarray:
    """`max_pool` of each, one row each (one `max` per text measured faster than a `maximum.reduceat`
    over their concatenation, or a padded block)."""
    return np.stack([max_pool(v) for v in views])


@dataclass
class _Regression:
    mu: np.ndarray
    w: np.ndarray
    b: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray, classes: int) -> _Regression:
        mu = x.mean(0)
        w, b = fit_softmax_regression(normalise(x - mu).astype(np.float32), y, classes)
        return cls(mu, w, b)

    def logits(self, q: np.ndarray) -> np.ndarray:
        return normalise(q - self.mu) @ self.w + self.b


@dataclass(frozen=True)
class SifWeights:
    """Token weight a / (a + p), p the token's frequency among the examples' tokens (0 if unseen)."""

    vocabulary: np.ndarray  # sorted token ids seen in the examples
    probability: np.ndarray  # their frequency among all example tokens

    @classmethod
    def fit(cls, examples: Sequence[TokenViews]) -> SifWeights:
        vocabulary, freq = np.unique(np.concatenate([v.ids for v in examples]), return_counts=True)
        return cls(vocabulary, (freq / freq.sum()).astype(np.float32))

    def pool(self, views: TokenViews) -> np.ndarray:
        return self.pool_many([views])[0]

    def pool_many(self, views: Sequence[TokenViews]) -> np.ndarray:
        """Per text, the weighted mean of the last layer's token states; one row each, in one pass of
        numpy calls for all of them (the request path pools the concurrent questions together)."""
        ids = np.concatenate([v.ids for v in views])
        at = np.minimum(np.searchsorted(self.vocabulary, ids), len(self.vocabulary) - 1)
        p = np.where(self.vocabulary[at] == ids, self.probability[at], 0.0)
        weight = (SIF_A / (SIF_A + p)).astype(np.float32)
        lengths = [len(v.ids) for v in views]
        spread = np.zeros((len(views), len(ids)), np.float32)  # row i: text i's token weights, 0 elsewhere
        spread[np.repeat(np.arange(len(views)), lengths), np.arange(len(ids))] = weight
        summed = spread @ np.concatenate([v.last for v in views])
        return summed / np.maximum(spread.sum(1), 1e-9)[:, None]


@dataclass
class TokenViewModel:
    sif_weights: SifWeights
    sif: _Regression
    maxed: _Regression
    sif_examples: np.ndarray  # normalised SIF vectors of the examples, grouped by template
    starts: np.ndarray

    @classmethod
    def fit(cls, examples: Sequence[Sequence[TokenViews]], descriptions: Sequence[TokenViews]) -> TokenViewModel:
        """`examples[i]`: template i's examples (at least one), `descriptions[i]`: its description."""
        counts = np.array([len(e) for e in examples])
        if len(examples) != len(descriptions) or len(examples) < 2 or (counts == 0).any():
            raise ValueError("token views need one description and at least one example per template")
        flat = [v for group in examples for v in group]
        weights = SifWeights.fit(flat)
        rows = [*flat, *descriptions]
        y = np.concatenate([np.repeat(np.arange(len(examples)), counts), np.arange(len(examples))])
        chunks = [rows[i : i + _POOL_CHUNK] for i in range(0, len(rows), _POOL_CHUNK)]
        sif = np.concatenate([weights.pool_many(c) for c in chunks])
        return cls(
            weights,
            _Regression.fit(sif, y, len(examples)),
            _Regression.fit(np.concatenate([max_pool_many(c) for c in chunks]), y, len(examples)),
            normalise(sif[: len(flat)]),
            np.concatenate([[0], np.cumsum(counts)[:-1]]),
        )

    @property
    def weight(self) -> float:
        """Sum of the weights of the standardised scores this model adds."""
        return SIF_WEIGHT * (1 + SIF_KNN) + MAX_WEIGHT

    def fused(self, views: TokenViews) -> np.ndarray:
        """Per-template contribution to the intent model's fused score (standardised, weighted)."""
        return self.fused_many([views])[0]

    def pool(self, views: Sequence[TokenViews]) -> PooledViews:
        """What the model needs of each question's views (its two poolings), one row each."""
        return PooledViews(self.sif_weights.pool_many(views), max_pool_many(views))

    def fused_many(self, views: Sequence[TokenViews] | PooledViews) -> np.ndarray:
        """`fused` for several questions, one row each (the poolings per question, the rest in products)."""
        pooled = views if isinstance(views, PooledViews) else self.pool(views)
        knn = np.maximum.reduceat(normalise(pooled.sif) @ self.sif_examples.T, self.starts, axis=1)
        z = standardise(np.stack([self.sif.logits(pooled.sif), knn, self.maxed.logits(pooled.maxed)]))
        return SIF_WEIGHT * (z[0] + SIF_KNN * z[1]) + MAX_WEIGHT * z[2]


@dataclass(frozen=True)
class PooledViews:
    """Questions' views pooled by one fitted TokenViewModel: its SIF pooling and max pooling, one row each."""

    sif: np.ndarray
    maxed: np.ndarray


class PooledViewCache:
    """The pooled views of recent questions for one fitted model (a refit brings a new model and an empty
    cache). The embedding cache answers a question asked again without the encoder, but its token views
    were only remembered for the encoder's last 256 questions: past that, every repeated question ran a
    forward pass for its views alone (a third of the demo's throughput on 400 questions asked in turn).
    Used from the event loop only."""

    def __init__(self, model: TokenViewModel, size: int = POOLED_QUESTIONS) -> None:
        self.model = model
        self._rows: Recent[str, tuple[np.ndarray, np.ndarray]] = Recent(size)

    async def pooled(
        self, texts: Sequence[str], fetch: Callable[[list[str]], Awaitable[list[TokenViews]]]
    ) -> PooledViews:
        """These questions' pooled views; the views of those not kept are fetched (one call) and pooled."""
        rows = self._rows.get_many(dict.fromkeys(texts))
        todo = [t for t in dict.fromkeys(texts) if t not in rows]
        if todo:
            fresh = self.model.pool(await fetch(todo))
            new = {t: (fresh.sif[i].copy(), fresh.maxed[i].copy()) for i, t in enumerate(todo)}  # not the batch
            self._rows.put_many(new.items())
            rows.update(new)
        return PooledViews(np.stack([rows[t][0] for t in texts]), np.stack([rows[t][1] for t in texts]))

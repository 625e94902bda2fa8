"""A light intent model fitted at load time on every nl_example of a composite's templates (numpy only).

Nearest-example cosine (what a vector store gives) reaches 80% top-1 on BANKING77 with eight examples
per intent. Fused here as a weighted sum of per-question standardised scores; validation accuracy on
held-out BANKING77 train rows (k=8: 3 seeds x 3,000 rows; k=all: 2 folds of 20%), never on test:
- a multinomial logistic regression on the centred example embeddings, the description counted as
  one more example: the strongest single signal (82.97% at k=8, 92.15% at k=all);
- log-sum-exp aggregation of a template's example similarities on centred vectors (a soft max that
  rewards several close examples) and the plain max cosine: 83.24 / 93.20 with the regression;
- a lexical logistic regression over the full vocabulary of words, word bigrams and character 2-5
  grams (sparse, in numpy): 83.62 / 93.78. It needs the texts; without them it is skipped.
- with few examples per template, token views of the same encoder pass (token_views.py): 84.39 at
  k=8 (validation re-measured with this code's data split: 83.87 without them). They need an
  embedder with token states (the local MiniLM); without them they are skipped.
Measured and dropped (no validation gain or a loss): mixup / noise augmentation of the regression's
training set, embedding word-dropout and word-swap variants of each example (-0.5 to -1 point),
whitening, removing top principal components, a cosine classifier, random ReLU features, shrinkage
LDA, kernel ridge, a joint embedding + TF-IDF regression, multinomial naive Bayes, the description in
the kNN pools, other LSE temperatures, more regression steps.
The fused score becomes a 0..1 confidence through a logistic calibration of (fused z-score, the
question's best raw cosine, margin to the best other template). The calibration is monotone in the
fused score, so the ranking is exactly the fused ranking (an earlier version used each template's own
max cosine in the calibration, which re-ranked and cost 0.7 points). `python run.py fit-thresholds`
fits the threshold that goes with it on your own questions.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..embedding.base import TokenViews
    from .token_views import PooledViews, TokenViewModel

LSE_TEMPERATURE = 0.05  # 0.02..0.08 within 0.05 points on validation
# embedding regression: nearly unregularised, early-stopped (larger L2 or more steps: no gain)
L2 = 1e-5
STEPS = 100
LEARNING_RATE = 0.3
# lexical regression: fixed number of mini-batch steps, so the fit cost does not grow with the data
LEXICAL_STEPS = 150
LEXICAL_BATCH = 128
LEXICAL_LEARNING_RATE = 0.1
LEXICAL_MAX_FEATURES = 30_000
LEXICAL_MAX_CELLS = 12_000_000  # vocabulary x templates cap (memory: 3 float32 arrays of this size at fit)
# fusion weights on per-question standardised scores (validation grid 0..1; k=8 and k=all agree on these)
FUSION = {"regression": 1.0, "knn_lse": 0.25, "knn_max": 0.5}
# the lexical model is only as good as its data: validation wants 0.25 at 8 examples per template and
# 0.5 at ~130 (0.5 at k=8 costs 0.4 points); weight = LEXICAL_WEIGHT * min(1, sqrt(examples / 32))
LEXICAL_WEIGHT = 0.5
LEXICAL_FULL_WEIGHT_EXAMPLES = 32
# confidence = sigmoid(a*F + b*best_cos + c*margin + d): a logistic fit of "top-1 is in scope and right"
# on train-only validation (10 intents held out as out-of-scope; k=8 x 3 seeds and k=all pooled with
# equal weight). AUROC in-scope-right vs rest: k=8 0.904 -> 0.908, k=all 0.935 -> 0.946 over the
# previous coefficients. They depend on the number of examples per template: a default only.
CALIBRATION = (0.61, 6.41, 0.70, -9.75)


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


def fit_softmax_regression(x: np.ndarray, y: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression, full-batch Adam from zero weights, L2 on W."""
    n, d = x.shape
    w = np.zeros((d, classes), np.float32)
    b = np.zeros(classes, np.float32)
    mw, vw, mb, vb = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    rows = np.arange(n)
    for t in range(1, STEPS + 1):
        z = x @ w + b
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[rows, y] -= 1.0
        p /= n
        gw = x.T @ p + L2 * w
        gb = p.sum(0)
        mw = 0.9 * mw + 0.1 * gw
        vw = 0.999 * vw + 0.001 * gw * gw
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        w -= LEARNING_RATE * (mw / c1) / (np.sqrt(vw / c2) + 1e-8)
        b -= LEARNING_RATE * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return w, b


_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")  # letters/digits of any script, inner apostrophes
CHAR_NGRAMS = (2, 5)  # of " word " (with boundary spaces), like scikit-learn's char_wb


@dataclass
class SparseRows:
    """CSR matrix: row i holds features indices[indptr[i]:indptr[i+1]] with values data[...]."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1

    def row_ids(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows), np.diff(self.indptr))

    def dot(self, w: np.ndarray) -> np.ndarray:
        """self @ w for a dense (features x k) matrix."""
        out = np.zeros((self.rows, w.shape[1]), np.float32)
        filled = np.diff(self.indptr) > 0
        if filled.any():
            products = w[self.indices] * self.data[:, None]
            out[filled] = np.add.reduceat(products, self.indptr[:-1][filled], axis=0)
        return out


def _char_grams(word: str) -> list[str]:
    padded = f" {word} "
    lo, hi = CHAR_NGRAMS
    return [padded[i : i + n] for n in range(lo, hi + 1) for i in range(len(padded) - n + 1)]


class LexicalFeatures:
    """Fitted vocabulary + idf; `transform` maps texts to L2-normalised sublinear TF-IDF rows."""

    def __init__(self, max_features: int) -> None:
        self.max_features = max_features
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0, np.float32)
        self._word_ids: dict[str, list[int]] = {}

    @property
    def size(self) -> int:
        return len(self.vocabulary)

    def _word_features(self, word: str) -> list[int]:
        ids = self._word_ids.get(word)
        if ids is None:
            found = [self.vocabulary.get(g) for g in ["w " + word, *_char_grams(word)]]
            ids = [i for i in found if i is not None]
            if len(self._word_ids) < 100_000:  # bounded: queries bring unseen words
                self._word_ids[word] = ids
        return ids

    def _ids(self, text: str) -> list[int]:
        """The text's feature ids, repeated as often as they occur."""
        words = _WORD.findall(text.lower())
        ids: list[int] = []
        for w in words:
            ids.extend(self._word_features(w))
        vocabulary = self.vocabulary
        ids.extend(i for a, b in pairwise(words) if (i := vocabulary.get(f"b {a} {b}")) is not None)
        return ids

    def fit(self, texts: Sequence[str]) -> LexicalFeatures:
        """Vocabulary = the `max_features` features found in most texts (ties: first seen)."""
        grams: dict[str, int] = {}
        feat_ids: list[np.ndarray] = []
        char_cache: dict[str, list[int]] = {}
        for text in texts:
            words = _WORD.findall(text.lower())
            ids: list[int] = []
            for w in words:
                cached = char_cache.get(w)
                if cached is None:
                    cached = [grams.setdefault(g, len(grams)) for g in ["w " + w, *_char_grams(w)]]
                    char_cache[w] = cached
                ids.extend(cached)
            ids.extend(grams.setdefault(f"b {a} {b}", len(grams)) for a, b in pairwise(words))
            feat_ids.append(np.unique(np.array(ids, np.int64)))
        df = np.bincount(np.concatenate(feat_ids), minlength=len(grams)) if grams else np.zeros(0, np.int64)
        keep = np.argsort(-df, kind="stable")[: self.max_features]
        names = list(grams)
        self.vocabulary = {names[i]: n for n, i in enumerate(keep)}
        n = len(texts)
        self.idf = (np.log((1 + n) / (1 + df[keep])) + 1).astype(np.float32)
        self._word_ids = {}
        return self

    def transform(self, texts: Sequence[str]) -> SparseRows:
        """All the texts in one pass of numpy calls (a dozen per batch, not per text: on the request path
        the texts are the concurrent questions)."""
        flat: list[int] = []
        lengths: list[int] = []
        for text in texts:
            ids = self._ids(text)
            flat.extend(ids)
            lengths.append(len(ids))
        width = max(self.size, 1)
        # one key per (row, feature): sorted, they run by row, then feature, repeats side by side
        keys = np.array(flat, np.int64)
        if len(texts) > 1:
            keys += np.repeat(np.arange(len(texts), dtype=np.int64) * width, lengths)
        keys.sort()
        edges = np.ones(len(keys) + 1, bool)  # where a run of equal keys starts, and the end
        np.not_equal(keys[1:], keys[:-1], out=edges[1:-1])
        bounds = np.flatnonzero(edges)
        rows, indices = np.divmod(keys[bounds[:-1]], width)
        values = np.log(bounds[1:] - bounds[:-1], dtype=np.float32)
        values += 1.0
        values *= self.idf[indices]
        norms = np.sqrt(np.bincount(rows, weights=values * values, minlength=len(texts)), dtype=np.float32)
        values /= np.maximum(norms, 1e-12)[rows]
        indptr = np.searchsorted(rows, np.arange(len(texts) + 1))
        return SparseRows(indptr, indices, values)


def fit_sparse_softmax(
    x: SparseRows,
    y: np.ndarray,
    classes: int,
    features: int,
    *,
    steps: int,
    batch: int,
    learning_rate: float,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression on sparse rows: mini-batch Adam, updating only touched rows.

    Each step densifies the batch over the features it uses (a few thousand), so the cost per step
    does not grow with the vocabulary or the number of examples: fit time is bounded by `steps`.
    """
    w = np.zeros((features, classes), np.float32)
    b = np.zeros(classes, np.float32)
    mw, vw = np.zeros_like(w), np.zeros_like(w)
    mb, vb = np.zeros_like(b), np.zeros_like(b)
    rng = np.random.default_rng(seed)
    order = rng.permutation(x.rows)
    cursor = 0
    for t in range(1, steps + 1):
        if cursor >= len(order):
            order, cursor = rng.permutation(x.rows), 0
        rows = order[cursor : cursor + batch]
        cursor += batch
        starts, ends = x.indptr[rows], x.indptr[rows + 1]
        spans = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends, strict=True)])
        used, local = np.unique(x.indices[spans], return_inverse=True)
        dense = np.zeros((len(rows), len(used)), np.float32)
        dense[np.repeat(np.arange(len(rows)), ends - starts), local] = x.data[spans]
        wu = w[used]
        z = dense @ wu + b
        z -= z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        p[np.arange(len(rows)), y[rows]] -= 1.0
        p /= len(rows)
        gw, gb = dense.T @ p, p.sum(0)
        c1, c2 = 1 - 0.9**t, 1 - 0.999**t
        m = 0.9 * mw[used] + 0.1 * gw
        v = 0.999 * vw[used] + 0.001 * gw * gw
        mw[used], vw[used] = m, v
        w[used] = wu - learning_rate * (m / c1) / (np.sqrt(v / c2) + 1e-8)
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        b -= learning_rate * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return w, b


@dataclass
class LexicalModel:
    features: LexicalFeatures
    w: np.ndarray
    b: np.ndarray

    @classmethod
    def fit(cls, texts: Sequence[str], y: np.ndarray, classes: int) -> LexicalModel | None:
        """None when the texts share no feature (nothing to learn)."""
        limit = max(1000, min(LEXICAL_MAX_FEATURES, LEXICAL_MAX_CELLS // classes))
        features = LexicalFeatures(limit).fit(texts)
        if features.size == 0:
            return None
        rows = features.transform(texts)
        w, b = fit_sparse_softmax(
            rows,
            y,
            classes,
            features.size,
            steps=LEXICAL_STEPS,
            batch=LEXICAL_BATCH,
            learning_rate=LEXICAL_LEARNING_RATE,
        )
        return cls(features, w, b)

    def logits(self, text: str) -> np.ndarray:
        return self.logits_many([text])[0]

    def logits_many(self, texts: Sequence[str]) -> np.ndarray:
        return self.features.transform(texts).dot(self.w) + self.b


@dataclass
class IntentModel:
    keys: list[Hashable]  # one per template, e.g. (adapter, template_id)
    mu: np.ndarray
    centred: np.ndarray  # examples, centred and re-normalised, grouped by template
    norms: np.ndarray  # |x - mu| per example: with centred_mu, gives raw cosines from the centred ones
    centred_mu: np.ndarray  # centred_x . mu per example
    starts: np.ndarray
    counts: np.ndarray
    w: np.ndarray
    b: np.ndarray
    lexical: LexicalModel | None = None
    lexical_weight: float = 0.0
    views: TokenViewModel | None = None  # attached by the caller when the embedder has token states

    @classmethod
    def fit(
        cls,
        keys: Sequence[Hashable],
        examples: Sequence[np.ndarray],
        descriptions: Sequence[np.ndarray],
        texts: Sequence[Sequence[str]] | None = None,
    ) -> IntentModel:
        """`examples[i]` holds template i's example vectors (at least one row), `descriptions[i]` one vector.

        `texts[i]` (optional) are template i's texts (description and examples) for the lexical model;
        without them the model uses the embeddings only.
        """
        if len(set(keys)) != len(keys) or not keys:
            raise ValueError("intent model needs distinct template keys")
        sizes = {len(examples), len(descriptions), len(keys) if texts is None else len(texts)}
        if sizes != {len(keys)}:
            raise ValueError("intent model needs one entry per template key")
        blocks = [np.atleast_2d(np.asarray(e, np.float32)) for e in examples]
        counts = np.array([len(bl) for bl in blocks])
        if (counts == 0).any():
            raise ValueError("every template needs at least one example vector (use its description)")
        raw = np.vstack(blocks)
        mu = raw.mean(0)
        centred = normalise(raw - mu)
        owner = np.repeat(np.arange(len(keys)), counts)
        desc = normalise(np.vstack([np.asarray(d, np.float32) for d in descriptions]) - mu)
        x = np.vstack([centred, desc]).astype(np.float32)
        y = np.concatenate([owner, np.arange(len(keys))])
        w, b = fit_softmax_regression(x, y, len(keys))
        lexical = None
        if texts is not None:
            flat = [t for group in texts for t in group]
            labels = np.repeat(np.arange(len(keys)), [len(group) for group in texts])
            lexical = LexicalModel.fit(flat, labels, len(keys)) if flat else None
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        norms = np.linalg.norm(raw - mu, axis=1).astype(np.float32)
        per_template = len(raw) / len(keys)
        lexical_weight = LEXICAL_WEIGHT * min(1.0, float(np.sqrt(per_template / LEXICAL_FULL_WEIGHT_EXAMPLES)))
        return cls(list(keys), mu, centred, norms, centred @ mu, starts, counts, w, b, lexical, lexical_weight)

    def analyse(self, query: np.ndarray, text: str | None = None, views: TokenViews | None = None) -> Analysis:
        """Every per-template signal of one question: the fused score and the parts behind it."""
        return self.analyse_many(
            np.asarray(query)[None], None if text is None else [text], None if views is None else [views]
        ).row(0)

    def analyse_many(
        self,
        queries: np.ndarray,
        texts: Sequence[str] | None = None,
        views: Sequence[TokenViews] | PooledViews | None = None,
    ) -> Analyses:
        """`analyse` for several questions (one row each) in matrix products: the request path asks with one,
        fit-thresholds with hundreds, and the per-question numpy calls cost more than the arithmetic."""
        q = np.asarray(queries, np.float32)
        qc = normalise(q - self.mu)
        sims = qc @ self.centred.T
        top = sims.max(axis=1, keepdims=True)
        sums = np.add.reduceat(np.exp((sims - top) / LSE_TEMPERATURE), self.starts, axis=1)
        knn_lse = top + LSE_TEMPERATURE * np.log(sums / self.counts)
        # raw cosines from the centred ones, saving a second pass over the examples (half the query cost):
        # x = |x - mu| c + mu and c.q = |q - mu| (c.qc) + c.mu, so x.q = |x - mu| (|q - mu| sims + c.mu) + mu.q
        offset = np.linalg.norm(q - self.mu, axis=1, keepdims=True)
        raw_sims = self.norms * (offset * sims + self.centred_mu) + (q @ self.mu)[:, None]
        knn_max = np.maximum.reduceat(raw_sims, self.starts, axis=1)
        regression = qc @ self.w + self.b
        z = standardise(np.stack([regression, knn_lse, knn_max]))  # each row on its own, in one call
        embedding = FUSION["regression"] * z[0] + FUSION["knn_lse"] * z[1] + FUSION["knn_max"] * z[2]
        fused = embedding
        weight = sum(FUSION.values())
        lexical = None
        if self.lexical is not None and texts is not None:
            lexical = self.lexical.logits_many(texts)
            fused = fused + self.lexical_weight * standardise(lexical)
            weight += self.lexical_weight
        if self.views is not None and views is not None:
            # rescaled to the weight without views, so that the calibration below keeps its meaning
            fused = (fused + self.views.fused_many(views)) * (weight / (weight + self.views.weight))
        return Analyses(fused, knn_max.max(axis=1), raw_sims, knn_max, regression, lexical, embedding)

    def fused(
        self, query: np.ndarray, text: str | None = None, views: TokenViews | None = None
    ) -> tuple[np.ndarray, float]:
        """Fused standardised score per template, and the question's best raw cosine."""
        analysis = self.analyse(query, text, views)
        return analysis.fused, analysis.best_cosine

    def calibrated(self, fused: np.ndarray, best_cosine: float | np.ndarray) -> np.ndarray:
        """0..1 confidence per template from the fused scores (monotone in them); also for rows of
        questions (`fused` (questions, templates), `best_cosine` (questions,))."""
        templates = fused.shape[-1]
        if templates > 1:
            top2 = np.partition(fused, templates - 2, axis=-1)[..., -2:]  # the second best, then the best
            second, best = top2[..., :1], top2[..., 1:]
            margin = fused - np.where(fused >= best, second, best)
        else:
            margin = np.zeros_like(fused)
        a, b, c, d = CALIBRATION
        cosine = np.asarray(best_cosine)[..., None]
        logit = np.clip(a * fused + b * cosine + c * margin + d, -50.0, 50.0)  # no overflow warnings
        return 1.0 / (1.0 + np.exp(-logit))

    def confidences(
        self, query: np.ndarray, text: str | None = None, views: TokenViews | None = None
    ) -> dict[Hashable, float]:
        """0..1 confidence for every template, in the order of the fused score."""
        fused, best_cosine = self.fused(query, text, views)
        return dict(zip(self.keys, self.calibrated(fused, best_cosine).tolist(), strict=True))


@dataclass(frozen=True)
class Analysis:
    """One question against the model: per-template arrays in key order, per-example raw cosines."""

    fused: np.ndarray
    best_cosine: float
    raw_sims: np.ndarray  # cosine to every example, grouped by template (IntentModel.starts)
    knn_max: np.ndarray  # best raw cosine per template
    regression: np.ndarray  # embedding regression logits
    lexical: np.ndarray | None  # lexical regression logits (None without the question's text)


@dataclass(frozen=True)
class Analyses:
    """Several questions against the model: the arrays of `Analysis`, one row per question."""

    fused: np.ndarray  # (questions, templates)
    best_cosine: np.ndarray  # (questions,)
    raw_sims: np.ndarray  # (questions, examples)
    knn_max: np.ndarray
    regression: np.ndarray
    lexical: np.ndarray | None
    embedding_fused: np.ndarray  # the fused score of the embedding signals alone (no lexical, no views)

    @classmethod
    def of(cls, analysis: Analysis) -> Analyses:
        """One analysed question as a batch of one (its fused score stands for the embedding fusion too)."""
        a = analysis
        lexical = None if a.lexical is None else a.lexical[None]
        return cls(
            a.fused[None],
            np.array([a.best_cosine]),
            a.raw_sims[None],
            a.knn_max[None],
            a.regression[None],
            lexical,
            a.fused[None],
        )

    def __len__(self) -> int:
        return len(self.fused)

    def row(self, i: int) -> Analysis:
        lexical = None if self.lexical is None else self.lexical[i]
        return Analysis(
            self.fused[i], float(self.best_cosine[i]), self.raw_sims[i], self.knn_max[i], self.regression[i], lexical
        )

    def embedding_only(self) -> Analyses:
        """What `analyse_many` gives without texts and views: the same products, the embedding fusion only
        (the acceptance test's features are computed on it, as in its simulation)."""
        return Analyses(
            self.embedding_fused,
            self.best_cosine,
            self.raw_sims,
            self.knn_max,
            self.regression,
            None,
            self.embedding_fused,
        )

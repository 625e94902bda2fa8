"""The intent model's lexical part: a logistic regression over words, word bigrams and character n-grams.

Sparse, in numpy. A cold fit runs a fixed number of mini-batch steps, so its cost does not grow with the
data; an edit of a few templates warm-starts from the previous weights (`LexicalModel.updated`) and runs a
few steps on batches that hold the changed templates' texts and sampled others.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from .fit_control import check, never
from .warm_start import adam_step, carried_columns, fit_columns, logsumexp

# fixed number of mini-batch steps, so the fit cost does not grow with the data
LEXICAL_STEPS = 150
LEXICAL_BATCH = 128
LEXICAL_LEARNING_RATE = 0.1
LEXICAL_MAX_FEATURES = 30_000
LEXICAL_MAX_CELLS = 12_000_000  # vocabulary x templates cap (memory: 3 float32 arrays of this size at fit)
# an edit: the fresh columns' steps (as many as a cold fit: each column gets as many Adam updates), and
# the sampled texts of other templates they are told apart from
EDIT_NEGATIVES = 512
DOT_CELLS = 4_000_000  # SparseRows.dot: stored values x columns per block (16 MB of float32)
# SparseRows.dot: up to this many rows, one vector-matrix product per row. At 1,000 templates it took 0.1
# against 1.7 ms for one question and 0.4 against 9.4 ms for eight (the blocks' reduceat down the rows of
# a (stored values x k) array dominated); a fit's thousands of rows stay in blocks (no Python loop per row)
ROWWISE_DOT_ROWS = 64


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
        """self @ w for a dense (features x k) matrix: a few rows (the questions of a request batch) one
        product of their values with their gathered rows of w each; more (a fit's) in row blocks, each
        holding a (stored values x k) array."""
        if self.rows <= ROWWISE_DOT_ROWS:
            out = np.zeros((self.rows, w.shape[1]), np.float32)
            for row, (begin, end) in enumerate(zip(self.indptr[:-1].tolist(), self.indptr[1:].tolist(), strict=True)):
                if end > begin:
                    out[row] = self.data[begin:end] @ w[self.indices[begin:end]]
            return out
        out = np.zeros((self.rows, w.shape[1]), np.float32)
        step = max(1, DOT_CELLS // max(1, w.shape[1] * max(1, len(self.data) // max(1, self.rows))))
        for lo in range(0, self.rows, step):
            hi = min(self.rows, lo + step)
            begin, end = self.indptr[lo], self.indptr[hi]
            filled = np.flatnonzero(np.diff(self.indptr[lo : hi + 1]) > 0)
            if len(filled):
                products = w[self.indices[begin:end]] * self.data[begin:end, None]
                out[lo + filled] = np.add.reduceat(products, self.indptr[lo + filled] - begin, axis=0)
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
    cancelled: Callable[[], bool] = never,
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
        check(cancelled)
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
        mb, vb = adam_step(w, mw, vw, wu, used, gw, b, mb, vb, gb, t, learning_rate)
    return w, b


@dataclass
class LexicalModel:
    features: LexicalFeatures
    w: np.ndarray
    b: np.ndarray

    @classmethod
    def fit(
        cls, texts: Sequence[str], y: np.ndarray, classes: int, cancelled: Callable[[], bool] = never
    ) -> LexicalModel | None:
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
            cancelled=cancelled,
        )
        return cls(features, w, b)

    def updated(
        self,
        texts: Sequence[Sequence[str]],
        positions: Sequence[int | None],
        fresh: Sequence[bool],
        cancelled: Callable[[], bool] = never,
    ) -> LexicalModel:
        """This model for a new list of templates (`texts[i]`: template i's texts; `positions[i]`: its column
        here, None when new; `fresh[i]`: new or edited). The vocabulary stays (words only the edit brought
        wait for the next full fit); unchanged templates keep their columns, and only the fresh columns are
        fitted, warm-started from their old weights: a softmax over them and the fixed logsumexp of all the
        other columns, on the fresh templates' texts and a sample of the others' (cost: the fresh columns only)."""
        w, b = carried_columns(self.w, self.b, positions)
        fresh_ids = np.flatnonzero(np.asarray(fresh, bool))
        if len(fresh_ids) == 0 or self.features.size == 0:
            return LexicalModel(self.features, w, b)
        rng = np.random.default_rng(0)
        positives = [(t, i) for i in fresh_ids.tolist() for t in texts[i]]
        others = [(t, i) for i, group in enumerate(texts) if not fresh[i] for t in group]
        if len(others) > EDIT_NEGATIVES:
            others = [others[j] for j in rng.choice(len(others), EDIT_NEGATIVES, replace=False)]
        pool = positives + others
        x = self.features.transform([t for t, _ in pool])
        used, local = np.unique(x.indices, return_inverse=True)  # the pool as a dense (rows x its features) block
        dense = np.zeros((x.rows, len(used)), np.float32)
        dense[x.row_ids(), local] = x.data
        check(cancelled)
        logits = dense @ w[used] + b  # one BLAS product: cheaper than the sparse gather at thousands of columns
        logits[:, fresh_ids] = -np.inf
        rest = logsumexp(logits)
        del logits
        # target: the fresh column of the row's template, or the lump of all the others (index len(fresh_ids))
        column = {int(i): n for n, i in enumerate(fresh_ids)}
        y = np.array([column.get(i, len(fresh_ids)) for _, i in pool])
        wf, bf = fit_columns(
            dense,
            y,
            rest,
            w[np.ix_(used, fresh_ids)],
            b[fresh_ids],
            len(positives),
            steps=LEXICAL_STEPS,
            batch=LEXICAL_BATCH,
            learning_rate=LEXICAL_LEARNING_RATE,
            cancelled=cancelled,
        )
        w[np.ix_(used, fresh_ids)], b[fresh_ids] = wf, bf
        return LexicalModel(self.features, w, b)

    def logits(self, text: str) -> np.ndarray:
        return self.logits_many([text])[0]

    def logits_many(self, texts: Sequence[str]) -> np.ndarray:
        return self.features.transform(texts).dot(self.w) + self.b

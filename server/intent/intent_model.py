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

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .example_rows import ExampleRows
from .fit_control import FitCancelled, NeedsFullFit, check, never
from .lexical_model import (
    LEXICAL_BATCH,
    LEXICAL_LEARNING_RATE,
    LEXICAL_MAX_CELLS,
    LEXICAL_MAX_FEATURES,
    LEXICAL_STEPS,
    LexicalFeatures,
    LexicalModel,
    SparseRows,
    fit_sparse_softmax,
)
from .softmax_regression import FIT_BATCH, LEARNING_RATE, STEPS, fit_softmax_regression, normalise, standardise
from .warm_start import carried_columns, fit_columns, logsumexp

__all__ = [  # the lexical part moved to lexical_model.py; its names stay importable from here
    "LEXICAL_BATCH",
    "LEXICAL_LEARNING_RATE",
    "LEXICAL_MAX_CELLS",
    "LEXICAL_MAX_FEATURES",
    "LEXICAL_STEPS",
    "FitCancelled",
    "LexicalFeatures",
    "LexicalModel",
    "NeedsFullFit",
    "SparseRows",
    "fit_sparse_softmax",
]

if TYPE_CHECKING:
    from ..embedding.base import TokenViews
    from .first_pass import FirstPass
    from .token_views import PooledViews, TokenViewModel

LSE_TEMPERATURE = 0.05  # 0.02..0.08 within 0.05 points on validation
# `share` compares the stores' rows with the model's this many templates at a time (a block's gather of
# 20 examples each: 7.5 MB of MiniLM rows)
SHARE_BLOCK_TEMPLATES = 256
EDIT_NEGATIVES = 4096  # an edit: rows of other templates the refitted columns are told apart from
# an update (an edit of a few templates) keeps the model's centre while the examples' mean stays this close
# to it, and refits at most this share of the templates (at least one); beyond, a full fit. On BANKING77
# (held-out train rows), adding 1 of 77 templates by an update scores as a full fit; 5 at once cost 0.6 points.
MAX_CENTRE_DRIFT = 0.05
MAX_UPDATED_SHARE = 0.05
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


@dataclass
class IntentModel:
    keys: list[Hashable]  # one per template, e.g. (adapter, template_id)
    mu: np.ndarray
    examples: ExampleRows  # the examples' raw vectors, grouped by template (own, or rows of the stores' packs)
    norms: np.ndarray  # |x - mu| per example: with centred_mu, gives centred cosines from the raw dots
    centred_mu: np.ndarray  # centred_x . mu per example
    starts: np.ndarray
    counts: np.ndarray
    w: np.ndarray
    b: np.ndarray
    lexical: LexicalModel | None = None
    lexical_weight: float = 0.0
    views: TokenViewModel | None = None  # attached by the caller when the embedder has token states
    desc: np.ndarray | None = None  # descriptions, centred and re-normalised (training rows of the regression)
    fit_info: FitInfo = field(default_factory=lambda: FitInfo("loaded", 0, 0))

    def __post_init__(self) -> None:
        # per example, what turns a raw dot q.x into the centred cosine (analyse_many): with x = n c + mu,
        # (q - mu).(x - mu) = q.x - q.mu - n (c.mu), divided by |q - mu| max(n, 1e-12) as `normalise` does
        norms = np.asarray(self.norms, np.float64)
        self._shift = (-norms * np.asarray(self.centred_mu, np.float64)).astype(np.float32)
        self._inverse = (1.0 / np.maximum(norms, 1e-12)).astype(np.float32)

    @classmethod
    def fit(
        cls,
        keys: Sequence[Hashable],
        examples: Sequence[np.ndarray],
        descriptions: Sequence[np.ndarray],
        texts: Sequence[Sequence[str]] | None = None,
        cancelled: Callable[[], bool] = never,
    ) -> IntentModel:
        """`examples[i]` holds template i's example vectors (at least one row), `descriptions[i]` one vector.

        `texts[i]` (optional) are template i's texts (description and examples) for the lexical model;
        without them the model uses the embeddings only. `cancelled()` is asked between steps (FitCancelled).
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
        rows = ExampleRows.own(np.vstack(blocks))  # the raw vectors the model scores against
        raw = rows.rows()  # a fresh array: centred in place, then normalised into the training rows
        n = len(raw)
        mu = raw.mean(0)
        raw -= mu
        norms = np.linalg.norm(raw, axis=1).astype(np.float32)
        x = np.empty((n + len(keys), raw.shape[1]), np.float32)  # examples, then descriptions (no stacked copy)
        np.divide(raw, np.maximum(norms, 1e-12)[:, None], out=x[:n])
        del raw
        centred_mu = x[:n] @ mu
        x[n:] = normalise(np.vstack([np.asarray(d, np.float32) for d in descriptions]) - mu)
        desc = x[n:].copy()  # its own rows: x must not outlive the fit
        owner = np.repeat(np.arange(len(keys)), counts)
        y = np.concatenate([owner, np.arange(len(keys))])
        w, b = fit_softmax_regression(x, y, len(keys), cancelled)
        lexical = None
        if texts is not None:
            flat = [t for group in texts for t in group]
            labels = np.repeat(np.arange(len(keys)), [len(group) for group in texts])
            lexical = LexicalModel.fit(flat, labels, len(keys), cancelled) if flat else None
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        per_template = n / len(keys)
        lexical_weight = LEXICAL_WEIGHT * min(1.0, float(np.sqrt(per_template / LEXICAL_FULL_WEIGHT_EXAMPLES)))
        info = FitInfo("full", len(keys), len(x))
        return cls(
            list(keys), mu, rows, norms, centred_mu, starts, counts, w, b, lexical, lexical_weight,
            desc=desc, fit_info=info,
        )  # fmt: skip

    def updated(
        self,
        keys: Sequence[Hashable],
        changed: Mapping[Hashable, tuple[np.ndarray, np.ndarray]],
        texts: Sequence[Sequence[str]] | None = None,
        cancelled: Callable[[], bool] = never,
    ) -> IntentModel:
        """This model for the templates `keys`, where only those in `changed` (key -> (example vectors,
        description vector)) are new or edited and the others are as this model has them; templates of
        this model not in `keys` are dropped. Only the changed templates are refitted: their regression
        columns (and lexical columns) warm-start from the old ones (warm_start.py), the other columns stay.
        The centre `mu` stays this model's (NeedsFullFit when the examples' mean moved more than
        MAX_CENTRE_DRIFT from it, or the model was stored by an older version). Token views are not carried
        over (they need the encoder's pass over every text: a full fit)."""
        if self.desc is None:
            raise NeedsFullFit("the model has no description rows (fitted by an older version)")
        if len(set(keys)) != len(keys) or len(keys) < 2:
            raise ValueError("intent model needs distinct template keys")
        at = {k: i for i, k in enumerate(self.keys)}
        unknown = [k for k in keys if k not in changed and k not in at]
        if unknown:
            raise ValueError(f"{len(unknown)} template(s) neither changed nor in the model")
        if len(changed) > max(1, MAX_UPDATED_SHARE * len(keys)):
            raise NeedsFullFit(f"{len(changed)} of {len(keys)} templates changed")
        pieces: list[tuple[ExampleRows, np.ndarray] | np.ndarray] = []
        norms, descs, counts_list = [], [], []
        for k in keys:
            check(cancelled)
            if k in changed:
                examples, description = changed[k]
                raw = np.atleast_2d(np.asarray(examples, np.float32))
                if not len(raw):
                    raise ValueError("every template needs at least one example vector (use its description)")
                pieces.append(raw)
                norms.append(np.linalg.norm(raw - self.mu, axis=1).astype(np.float32))
                descs.append(normalise(np.asarray(description, np.float32) - self.mu).astype(np.float32))
                counts_list.append(len(raw))
            else:
                i = at[k]
                s, n = int(self.starts[i]), int(self.counts[i])
                pieces.append((self.examples, np.arange(s, s + n)))
                norms.append(self.norms[s : s + n])
                descs.append(self.desc[i])
                counts_list.append(n)
        example_rows = ExampleRows.joined(pieces)
        norm, desc = np.concatenate(norms), np.stack(descs)
        centred = example_rows.rows()
        if example_rows.wasteful():  # rows nobody reads any more (edits without a store to share with)
            example_rows = ExampleRows.own(centred)
        centred -= self.mu
        centred /= np.maximum(norm, 1e-12)[:, None]
        drift = float(np.linalg.norm(norm @ centred / len(centred)))  # |mean(raw) - mu|, as raw = norm c + mu
        if drift > MAX_CENTRE_DRIFT:
            raise NeedsFullFit(f"the examples' mean moved {drift:.3f} from the model's centre")
        counts = np.array(counts_list)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        positions = [at.get(k) for k in keys]
        fresh = np.array([p is None or k in changed for k, p in zip(keys, positions, strict=True)])
        w, b, rows = self._refit_columns(centred, desc, starts, counts, positions, fresh, cancelled)
        lexical = self.lexical
        if lexical is not None and texts is not None:
            lexical = lexical.updated(texts, positions, fresh.tolist(), cancelled)
        per_template = len(centred) / len(keys)
        weight = LEXICAL_WEIGHT * min(1.0, float(np.sqrt(per_template / LEXICAL_FULL_WEIGHT_EXAMPLES)))
        info = FitInfo("incremental", int(fresh.sum()), rows)
        return IntentModel(
            list(keys), self.mu, example_rows, norm, centred @ self.mu, starts, counts, w, b, lexical, weight,
            desc=desc, fit_info=info,
        )  # fmt: skip

    def share(self, found: Mapping[Hashable, tuple[np.ndarray, np.ndarray]]) -> int:
        """Read the examples of the templates in `found` (key -> (a matrix, the rows of it holding that
        template's examples in order)) from there, where those rows hold exactly the vectors this model has:
        the matrices are the stores' packs, which keep them anyway, so the model's own copy goes.
        The others stay the model's own. In place, one attribute swap: a question scored meanwhile sees the
        same vectors either way (its dot products may differ in the last float32 bits, as BLAS sums a matrix
        of another shape in another order). Returns how many examples are now read from `found`."""
        every = self.examples.in_order()
        held = self._held_by(found, every)
        pieces: list[tuple[ExampleRows, np.ndarray] | np.ndarray] = []
        wrapped: dict[int, ExampleRows] = {}
        shared = 0
        for key, start, count, there in zip(
            self.keys, self.starts.tolist(), self.counts.tolist(), held.tolist(), strict=True
        ):
            if there:
                matrix, rows = found[key]
                source = wrapped.setdefault(id(matrix), ExampleRows((matrix,), None))
                pieces.append((source, np.asarray(rows, np.int64)))
                shared += count
            else:
                pieces.append(every[start : start + count])  # copied into the new matrix of the model's own
        if shared:
            self.examples = ExampleRows.joined(pieces)
        elif not self.examples.column_major:  # a loaded model that the packs do not hold: its own, column-major
            self.examples = ExampleRows.own(every)
        return shared

    def _held_by(self, found: Mapping[Hashable, tuple[np.ndarray, np.ndarray]], every: np.ndarray) -> np.ndarray:
        """Per template, whether `found` holds its examples with the values in `every` (the model's rows in
        order). A block of templates at a time: one gather and one comparison per block, not per template
        (a warm start at 5,000 templates spent 0.25-0.4 s here, most of it in a copy of every row and 5,000
        small comparisons)."""
        held = np.zeros(len(self.keys), bool)
        by_matrix: dict[int, tuple[np.ndarray, list[int]]] = {}
        for t, (key, count) in enumerate(zip(self.keys, self.counts.tolist(), strict=True)):
            matrix, rows = found.get(key, (None, None))
            if matrix is not None and rows is not None and len(rows) == count and matrix.shape[1:] == every.shape[1:]:
                by_matrix.setdefault(id(matrix), (matrix, []))[1].append(t)
        for matrix, templates in by_matrix.values():
            for lo in range(0, len(templates), SHARE_BLOCK_TEMPLATES):
                part = np.asarray(templates[lo : lo + SHARE_BLOCK_TEMPLATES], np.int64)
                rows = np.concatenate([np.asarray(found[self.keys[t]][1], np.int64) for t in part])
                counts = self.counts[part].astype(np.int64)
                positions = self.example_positions(part)
                differs = np.r_[0, np.cumsum(~(matrix[rows] == every[positions]).all(axis=1))]
                ends = np.cumsum(counts)
                held[part] = differs[ends] == differs[ends - counts]  # no differing row in the template's run
        return held

    def _refit_columns(
        self,
        centred: np.ndarray,
        desc: np.ndarray,
        starts: np.ndarray,
        counts: np.ndarray,
        positions: list[int | None],
        fresh: np.ndarray,
        cancelled: Callable[[], bool],
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The regression for the new template list: old columns where unchanged, the fresh ones refitted
        against the fixed others (their examples and descriptions, and sampled rows of other templates)."""
        w, b = carried_columns(self.w, self.b, positions)
        fresh_ids = np.flatnonzero(fresh)
        if not len(fresh_ids):
            return w, b, 0
        owner = np.repeat(np.arange(len(counts)), counts)
        pos_rows = np.flatnonzero(fresh[owner])
        others = np.flatnonzero(~fresh[owner])
        positives = len(pos_rows) + len(fresh_ids)
        # the pool fits one batch when the edit is small: every step reads the same rows, no resampling
        room = max(min(EDIT_NEGATIVES, FIT_BATCH - positives), EDIT_NEGATIVES // 2)
        rng = np.random.default_rng(0)
        if len(others) > room:
            others = np.sort(rng.choice(others, room, replace=False))
        stale_desc = np.flatnonzero(~fresh)[: max(0, room - len(others))]
        x = np.vstack([centred[pos_rows], desc[fresh_ids], centred[others], desc[stale_desc]])
        labels = np.concatenate([owner[pos_rows], fresh_ids, owner[others], stale_desc])
        check(cancelled)
        logits = x @ w + b
        logits[:, fresh_ids] = -np.inf
        rest = logsumexp(logits)
        del logits
        column = np.full(len(counts), len(fresh_ids))
        column[fresh_ids] = np.arange(len(fresh_ids))
        wf, bf = fit_columns(
            x,
            column[labels],
            rest,
            w[:, fresh_ids],
            b[fresh_ids],
            positives,
            steps=STEPS,
            batch=FIT_BATCH,
            learning_rate=LEARNING_RATE,
            cancelled=cancelled,
        )
        w[:, fresh_ids], b[fresh_ids] = wf, bf
        return w, b, positives

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
        first_pass: FirstPass | None = None,
        exact: Sequence[Sequence[int]] = (),
    ) -> Analyses:
        """`analyse` for several questions (one row each) in matrix products: the request path asks with one,
        fit-thresholds with hundreds, and the per-question numpy calls cost more than the arithmetic.
        `first_pass`: the search's int8 pass over these examples (first_pass.py), read instead of the
        float32 rows, exactly for the templates (score columns) `exact[i]` of question i."""
        q = np.asarray(queries, np.float32)
        qc = normalise(q - self.mu)
        # one pass over the raw examples gives both kinds of cosine: the raw ones (knn_max) as they are, the
        # centred ones from them and per-example constants (__post_init__), so the model keeps no centred copy
        if first_pass is not None:
            if len(exact) != len(q):
                raise ValueError("the int8 first pass needs each question's exactly scored templates")
            raw_sims = first_pass.dots(q, [self.example_positions(columns) for columns in exact])
        else:
            raw_sims = self.examples.dots(q)
        offset = np.maximum(np.linalg.norm(q - self.mu, axis=1, keepdims=True), 1e-12)
        sims = raw_sims - (q @ self.mu)[:, None]
        sims += self._shift
        sims *= self._inverse
        sims /= offset
        top = sims.max(axis=1, keepdims=True)
        sums = np.add.reduceat(np.exp((sims - top) / LSE_TEMPERATURE), self.starts, axis=1)
        knn_lse = top + LSE_TEMPERATURE * np.log(sums / self.counts)
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

    def example_positions(self, columns: Sequence[int] | np.ndarray) -> np.ndarray:
        """The positions of these templates' (score columns') examples in the model's example order."""
        at = np.asarray(columns, np.int64)
        counts = self.counts[at].astype(np.int64)
        within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(self.starts[at].astype(np.int64), counts) + within

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
class FitInfo:
    """How a model came to be (shown in the status): a full fit, an incremental update of an earlier fit
    (only `templates` changed templates and `rows` training rows were computed), or loaded from a file."""

    kind: str  # full | incremental | loaded
    templates: int
    rows: int

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "templates_fitted": self.templates, "rows_fitted": self.rows}


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

"""Acceptance: is the chosen template the answer at all? A probability separate from the ranking.

The combined score ranks templates well but is a poor test of "any template right?" (one score asked
to do two jobs). This model looks only at the chosen template and at what separates covered from
uncovered questions: how close the question is to the template's examples (nearest and top-3 mean,
also relative to how close the template's own examples are to each other), its margin over the other
templates, the intent model's fused score, probabilities and entropy, and whether the stages agree.

It is fitted from the templates alone, off the request path: in each of a few folds, some templates
are left out (their examples stand in for questions nothing covers) and some examples of the others
are left out (they stand in for covered questions); an intent model is fitted on the rest and the
left-out texts are scored. A logistic regression on those features, with the uncovered questions weighted to
`expected_out_of_scope_share`, gives P(this template answers the question rather than nothing
covering it); its default threshold is 0.5, the decision with the best expected accuracy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from .fit_control import check, never
from .intent_model import Analyses, Analysis, IntentModel

FEATURES = (
    "nearest_cosine",  # best cosine to the chosen template's examples
    "cosine_margin",  # that minus the best cosine to any other template
    "top3_cosine",  # mean of the 3 best cosines to the chosen template's examples (density)
    "relative_cosine",  # nearest cosine minus the template's typical example-to-nearest-example cosine
    "fused",  # intent model fused score of the chosen template (standardised over templates)
    "fused_margin",  # its margin over the best other template
    "regression_logodds",  # the embedding regression's probability, as log-odds
    "regression_entropy",  # entropy of the regression's distribution (nats)
    "agrees_nearest",  # 1 when the nearest example belongs to the chosen template
    "agrees_fused",  # 1 when the intent model's own first choice is the chosen template
)
DEFAULT_OUT_OF_SCOPE_SHARE = 0.15
BAYES_THRESHOLD = 0.5  # the self-calibrated default (see AcceptanceModel.fit)
FOLDS = 5
MAX_SIMULATED = 4000  # simulated questions scored per fit (bounds the fit time on large template sets)
SIMULATION_BATCH = 256  # simulated questions analysed per matrix product
L2 = 1e-2


@dataclass(frozen=True)
class TemplateProfile:
    """Per template: the mean cosine of each example to its nearest other example (1.0 with one)."""

    cohesion: np.ndarray

    @classmethod
    def fit(cls, model: IntentModel) -> TemplateProfile:
        raw = model.examples.rows()  # the examples' raw vectors
        raw = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
        cohesion = np.ones(len(model.keys), np.float32)
        for t, (start, count) in enumerate(zip(model.starts, model.counts, strict=True)):
            if count > 1:
                block = raw[start : start + count]
                sims = block @ block.T
                np.fill_diagonal(sims, -1.0)
                cohesion[t] = float(sims.max(1).mean())
        return cls(cohesion)


def features(model: IntentModel, analysis: Analysis, chosen: int, profile: TemplateProfile) -> np.ndarray:
    """The FEATURES of template index `chosen` for one analysed question."""
    return features_of(model, analysis, np.array([chosen]), profile)[0]


def features_of(model: IntentModel, analysis: Analysis, chosen: np.ndarray, profile: TemplateProfile) -> np.ndarray:
    """The FEATURES of several template indices of one analysed question, one row each."""
    return features_many(model, Analyses.of(analysis), np.zeros(len(chosen), np.int64), chosen, profile)


def _best_other(values: np.ndarray, rows: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Per (question row, chosen index), the largest value among the row's other templates (0.0 when
    there is none)."""
    if values.shape[1] < 2:
        return np.zeros(len(chosen))
    first = values.argmax(axis=1)
    at = np.arange(len(values))
    best = values[at, first]
    others = values.copy()
    others[at, first] = -np.inf
    second = others.max(axis=1)
    return np.where(chosen == first[rows], second[rows], best[rows]).astype(np.float64)


def _top3_means(model: IntentModel, raw_sims: np.ndarray, rows: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Per (question row, chosen index), the mean of the 3 best raw cosines to the template's examples
    (all of them when it has fewer): the examples of all pairs padded into one matrix, in blocks."""
    counts = model.counts[chosen]
    out = np.empty(len(chosen))
    width = int(counts.max()) if len(chosen) else 0
    columns = np.arange(width)
    step = max(1, (1 << 22) // max(width, 1))  # pairs per block: at most ~4M padded cells
    for lo in range(0, len(chosen), step):
        c, r, n = chosen[lo : lo + step], rows[lo : lo + step], counts[lo : lo + step]
        valid = columns < n[:, None]
        cells = np.where(valid, model.starts[c][:, None] + columns, 0)
        values = np.where(valid, raw_sims[r[:, None], cells], -np.inf)
        top = np.partition(values, width - 3, axis=1)[:, -3:] if width > 3 else values
        kept = np.isfinite(top)
        out[lo : lo + step] = np.where(kept, top, 0.0).sum(axis=1, dtype=np.float64) / kept.sum(axis=1)
    return out


def features_many(
    model: IntentModel, analyses: Analyses, rows: np.ndarray, chosen: np.ndarray, profile: TemplateProfile
) -> np.ndarray:
    """The FEATURES of (question row, template index) pairs of analysed questions, one row per pair, in
    one numpy pass: the request path judges every candidate of a question, fit-thresholds thousands of
    questions at once, and the acceptance fit thousands of simulated ones."""
    rows, chosen = np.asarray(rows, np.int64), np.asarray(chosen, np.int64)
    nearest = analyses.knn_max[rows, chosen].astype(np.float64)  # = the best of each template's raw cosines
    top3 = _top3_means(model, analyses.raw_sims, rows, chosen)
    other_cos = _best_other(analyses.knn_max, rows, chosen)
    fused = analyses.fused[rows, chosen].astype(np.float64)
    other_fused = _best_other(analyses.fused, rows, chosen)
    z = analyses.regression - analyses.regression.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    entropy = -(p * np.log(np.maximum(p, 1e-12))).sum(axis=1, dtype=np.float64)
    chosen_p = np.clip(p[rows, chosen].astype(np.float64), 1e-6, 1 - 1e-6)
    return np.stack(
        [
            nearest,
            nearest - other_cos,
            top3,
            nearest - profile.cohesion[chosen].astype(np.float64),
            fused,
            fused - other_fused,
            np.log(chosen_p / (1 - chosen_p)),
            entropy[rows],
            (nearest >= other_cos).astype(np.float64),
            (chosen == analyses.fused.argmax(axis=1)[rows]).astype(np.float64),
        ],
        axis=1,
    ).astype(np.float32)


def held_out_examples(count: int, folds: int) -> int:
    """Examples of a kept template that stand in for covered questions in one fold (it keeps one)."""
    return 0 if count < 2 else max(1, min(count - 1, count // folds))


@dataclass(frozen=True)
class Simulation:
    x: np.ndarray  # features of the chosen template per simulated question
    right: np.ndarray  # covered and the chosen template is its own
    uncovered: np.ndarray  # the question's template was left out


def simulate(
    keys: Sequence[Hashable],
    examples: Sequence[np.ndarray],
    descriptions: Sequence[np.ndarray],
    *,
    folds: int = FOLDS,
    seed: int = 0,
    max_questions: int = MAX_SIMULATED,
    cancelled: Callable[[], bool] = never,
) -> Simulation:
    """Left-out templates and examples scored by intent models fitted on the rest (see module doc).

    The fold models are embedding-only (no lexical part, no token views): those are most of an intent
    model's fit time, and the features at query time come from the same embedding-only analysis
    (`analysis_for_acceptance`), so simulation and service see the same kind of model.
    """
    rng = np.random.default_rng(seed)
    n = len(keys)
    folds = max(2, min(folds, n))
    fold_of = rng.permutation(n) % folds
    total = sum(len(np.atleast_2d(e)) for e in examples)
    # every example is left out once with its template, and ~once (1/folds per fold) as a covered question
    keep_share = min(1.0, max_questions / max(1.0, total * (2 - 1 / folds)))
    xs: list[np.ndarray] = []
    rights: list[bool] = []
    uncovered: list[bool] = []
    for f in range(folds):
        kept = [i for i in range(n) if fold_of[i] != f]
        if len(kept) < 2:
            continue
        k_keys, k_examples, k_desc = [], [], []
        questions: list[tuple[np.ndarray, int | None]] = []  # vector, true kept index (None: uncovered)
        for pos, i in enumerate(kept):
            vecs = np.atleast_2d(examples[i])
            out = set(rng.permutation(len(vecs))[: held_out_examples(len(vecs), folds)].tolist())
            k_keys.append(keys[i])
            k_desc.append(descriptions[i])
            k_examples.append(vecs[[j for j in range(len(vecs)) if j not in out]])
            questions += [(vecs[j], pos) for j in sorted(out)]
        for left_out in np.flatnonzero(fold_of == f).tolist():
            questions += [(v, None) for v in np.atleast_2d(examples[left_out])]
        if keep_share < 1.0:
            questions = [questions[j] for j in np.flatnonzero(rng.random(len(questions)) < keep_share)]
        if not questions:
            continue
        model = IntentModel.fit(k_keys, k_examples, k_desc, cancelled=cancelled)
        profile = TemplateProfile.fit(model)
        for lo in range(0, len(questions), SIMULATION_BATCH):
            check(cancelled)
            batch = questions[lo : lo + SIMULATION_BATCH]
            analyses = model.analyse_many(np.stack([vector for vector, _ in batch]))
            chosen = analyses.fused.argmax(axis=1)
            xs.append(features_many(model, analyses, np.arange(len(batch)), chosen, profile))
            rights += [truth is not None and c == truth for (_, truth), c in zip(batch, chosen.tolist(), strict=True)]
            uncovered += [truth is None for _, truth in batch]
    x = np.concatenate(xs) if xs else np.zeros((0, len(FEATURES)), np.float32)
    return Simulation(x, np.array(rights, bool), np.array(uncovered, bool))


def analysis_for_acceptance(model: IntentModel, query: np.ndarray) -> Analysis:
    """The embedding-only analysis the acceptance features are computed on (as in `simulate`)."""
    return model.analyse(query)


@dataclass(frozen=True)
class Expectation:
    """What the self-calibration expects at a threshold (on the simulated questions)."""

    threshold: float
    in_scope_accuracy: float
    out_of_scope_rejection: float
    accuracy: float  # with uncovered questions weighted to the expected share

    def to_json(self) -> dict[str, float]:
        return {k: round(v, 4) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class AcceptanceModel:
    mean: np.ndarray
    scale: np.ndarray
    w: np.ndarray
    b: float
    default_threshold: float
    expectation: Expectation
    out_of_scope_share: float

    @classmethod
    def fit(cls, sim: Simulation, out_of_scope_share: float = DEFAULT_OUT_OF_SCOPE_SHARE) -> AcceptanceModel:
        """Weighted logistic regression of "right" against "uncovered" on the standardised features.

        Covered questions the ranking got wrong are left out of the fit: executing or rejecting them
        is wrong either way, so they do not move the accuracy-optimal decision. With the uncovered
        ones weighted to the expected share, P >= 0.5 is then that decision (Bayes' rule), which on
        BANKING77 lands within 0.1 points of a threshold fitted on labelled questions, where a search
        for the best threshold over the simulated questions was off by up to 3.5 points.
        """
        if sim.right.sum() == 0 or sim.uncovered.sum() == 0:
            raise ValueError("acceptance needs simulated covered and uncovered questions (two or more templates)")
        mean = sim.x.mean(0)
        scale = np.maximum(sim.x.std(0), 1e-6)
        z = (sim.x - mean) / scale
        used = sim.right | sim.uncovered
        weights = _weights(sim, out_of_scope_share)
        w, b = _fit_logistic(z[used], sim.right[used].astype(np.float32), weights[used])
        model = cls(mean, scale, w, b, BAYES_THRESHOLD, Expectation(BAYES_THRESHOLD, 0, 0, 0), out_of_scope_share)
        expectation = expect(sim, model.probabilities(sim.x), BAYES_THRESHOLD, out_of_scope_share)
        return cls(mean, scale, w, b, BAYES_THRESHOLD, expectation, out_of_scope_share)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        logit = ((np.atleast_2d(x) - self.mean) / self.scale) @ self.w + self.b
        return 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))

    def probability(self, x: np.ndarray) -> float:
        return float(self.probabilities(x)[0])

    def parts(self, x: np.ndarray) -> dict[str, dict[str, float]]:
        """Each feature's value and its contribution to the log-odds (for test_routing)."""
        return self.parts_of(np.atleast_2d(x))[0]

    def parts_of(self, x: np.ndarray) -> list[dict[str, dict[str, float]]]:
        """`parts` for every row of `x` (rounded in numpy: per-element Python rounding cost more than the rest)."""
        values = np.round(x.astype(np.float64), 4).tolist()
        contributions = np.round((((x - self.mean) / self.scale) * self.w).astype(np.float64), 4).tolist()
        return [
            {name: {"value": v, "contribution": c} for name, v, c in zip(FEATURES, vs, cs, strict=True)}
            for vs, cs in zip(values, contributions, strict=True)
        ]


@dataclass(eq=False, slots=True)
class Judgement:
    """The test's verdict on one candidate: its probability, and the features behind it, turned into
    `parts` only when shown (test_routing): building them for every candidate was a sixth of
    fit-thresholds' routing time, which shows none."""

    probability: float
    features: np.ndarray  # one row of FEATURES
    model: AcceptanceModel

    def parts(self) -> dict[str, dict[str, float]]:
        return self.model.parts(self.features)


def _weights(sim: Simulation, share: float) -> np.ndarray:
    n_unc, n_cov = max(1, int(sim.uncovered.sum())), max(1, int((~sim.uncovered).sum()))
    return np.where(sim.uncovered, share / n_unc, (1 - share) / n_cov) * len(sim.x)


def expect(sim: Simulation, p: np.ndarray, threshold: float, share: float) -> Expectation:
    executes = p >= threshold
    covered = ~sim.uncovered
    in_scope = float((executes & sim.right)[covered].mean()) if covered.any() else 0.0
    rejection = float((~executes)[sim.uncovered].mean()) if sim.uncovered.any() else 0.0
    return Expectation(float(threshold), in_scope, rejection, (1 - share) * in_scope + share * rejection)


def _fit_logistic(z: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Newton steps on the weighted log-loss with a small L2 (a dozen features: exact and fast)."""
    x = np.hstack([z, np.ones((len(z), 1), np.float32)]).astype(np.float64)
    beta = np.zeros(x.shape[1])
    ridge = L2 * np.eye(x.shape[1])
    ridge[-1, -1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -50, 50)))
        grad = x.T @ (weights * (p - y)) / len(x) + ridge @ beta
        hess = (x * (weights * p * (1 - p))[:, None]).T @ x / len(x) + ridge + 1e-9 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta[:-1].astype(np.float32), float(beta[-1])


@dataclass(frozen=True)
class Acceptance:
    """A fitted acceptance test for one intent model: judges the candidates of a question."""

    intent_model: IntentModel
    profile: TemplateProfile
    model: AcceptanceModel
    threshold: float  # the configured one, or the self-calibrated default
    expectation: Expectation  # at that threshold, on the simulated questions
    simulated: int  # simulated questions it was fitted on
    index: dict[Hashable, int]  # template key -> position in the intent model

    @classmethod
    def fit(
        cls,
        intent_model: IntentModel,
        examples: Sequence[np.ndarray],
        descriptions: Sequence[np.ndarray],
        *,
        out_of_scope_share: float = DEFAULT_OUT_OF_SCOPE_SHARE,
        folds: int = FOLDS,
        threshold: float | None = None,
        cancelled: Callable[[], bool] = never,
    ) -> Acceptance:
        sim = simulate(intent_model.keys, examples, descriptions, folds=folds, cancelled=cancelled)
        model = AcceptanceModel.fit(sim, out_of_scope_share)
        chosen = model.default_threshold if threshold is None else threshold
        expectation = expect(sim, model.probabilities(sim.x), chosen, out_of_scope_share)
        index = {k: i for i, k in enumerate(intent_model.keys)}
        return cls(intent_model, TemplateProfile.fit(intent_model), model, chosen, expectation, len(sim.x), index)

    def rebased(self, intent_model: IntentModel) -> Acceptance:
        """This test on an updated intent model (an edit of a few templates): the template profile is
        recomputed, the fitted regression and its expectation are kept (a few changed templates barely move
        them; the next full fit simulates again)."""
        index = {k: i for i, k in enumerate(intent_model.keys)}
        profile = TemplateProfile.fit(intent_model)
        return Acceptance(intent_model, profile, self.model, self.threshold, self.expectation, self.simulated, index)

    def judge(self, analysis: Analysis, key: Hashable) -> tuple[float, dict[str, dict[str, float]]] | None:
        """P(template `key` answers the question) and the features behind it (None: unknown key).

        `analysis` is `analysis_for_acceptance(self.intent_model, query)`."""
        return self.judge_all(analysis, [key])[0]

    def judge_all(
        self, analysis: Analysis, keys: Sequence[Hashable]
    ) -> list[tuple[float, dict[str, dict[str, float]]] | None]:
        """`judge` for several candidates of one question at once (None for unknown keys)."""
        judged = self.judge_many(Analyses.of(analysis), [keys])[0]
        return [None if j is None else (j.probability, j.parts()) for j in judged]

    def judge_many(self, analyses: Analyses, keys: Sequence[Sequence[Hashable]]) -> list[list[Judgement | None]]:
        """`judge_all` for several questions (`keys[i]`: the candidates of the question in row i) in one
        pass, as Judgements. `analyses` is the embedding-only analysis (`Analyses.embedding_only`)."""
        out: list[list[Judgement | None]] = [[None] * len(k) for k in keys]
        rows, chosen, at = [], [], []
        for row, candidates in enumerate(keys):
            for j, key in enumerate(candidates):
                index = self.index.get(key)
                if index is not None:
                    rows.append(row)
                    chosen.append(index)
                    at.append((row, j))
        if not at:
            return out
        x = features_many(self.intent_model, analyses, np.array(rows), np.array(chosen), self.profile)
        probabilities = self.model.probabilities(x).tolist()
        for n, (row, j) in enumerate(at):
            out[row][j] = Judgement(probabilities[n], x[n], self.model)
        return out

    def to_json(self) -> dict[str, object]:
        """What the self-calibration expects (for fit-thresholds and the stats)."""
        return {
            "threshold": round(self.threshold, 4),
            "self_calibrated_threshold": round(self.model.default_threshold, 4),
            "expected_out_of_scope_share": self.model.out_of_scope_share,
            "expected": self.expectation.to_json(),
            "simulated_questions": self.simulated,
        }

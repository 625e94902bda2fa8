#!/usr/bin/env python3
"""Research: candidate features for the acceptance test (issue 15), on BANKING77 in numpy.

Same protocol as research_acceptance.py (seeds, splits, 10 intents held out as out-of-scope, the demo
composite's ranking, threshold fitted on the first half of the shuffled test questions and measured
on the other half). For every question it computes the 10 features the server uses plus 25
candidates, for the test questions (against the 67 in-scope templates) and for the self-calibration's
simulated questions (the same leave-templates-out / leave-examples-out folds as
server/routing/acceptance.simulate). Each feature set is fitted on the simulated questions only,
as the server does. Feature matrices are cached per (k, seed) under --cache.

Prints one JSON object per (k, seed, feature set): validation AUROC (right vs out-of-scope, first half),
the labelled threshold's and the self-calibrated threshold's in-scope accuracy, rejection and overall
accuracy on the second half, and the best rejection any threshold reaches on the second half while
in-scope accuracy stays at the issue's bar (`oracle_rejection`: an upper bound, not a result).
`--supervised` adds a diagnostic: all candidates fitted on the first half's real out-of-scope labels.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import research_acceptance as ra  # noqa: E402

from server.intent import acceptance as acc  # noqa: E402
from server.intent.intent_model import IntentModel  # noqa: E402
from server.intent.softmax_regression import normalise  # noqa: E402
from server.routing.decision import DecisionRule  # noqa: E402
from server.routing.fitting import Observation, evaluate, fit_threshold  # noqa: E402

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
SHRINKAGE = (0.2, 0.6)  # covariance shrinkage toward (trace / d) I for the Mahalanobis candidates
BARS = {8: 0.84, None: 0.92}  # the in-scope accuracy bar per size
SETS = {
    "current": list(acc.FEATURES),
    "current+lex_elsewhere": [*acc.FEATURES, "lex_elsewhere"],
    "current+lex_elsewhere+maha_global": [*acc.FEATURES, "lex_elsewhere", "maha_global"],
    "current+mahalanobis": [*acc.FEATURES, "maha_relative", "maha0.6_margin", "maha0.6_chosen"],
    "current+density": [*acc.FEATURES, "nearest_z", "share_close", "global_top5"],
    "current+energy": [*acc.FEATURES, "energy", "logit_chosen", "logit_margin"],
}


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


class Space:
    """One set of templates (a fold's, or all in-scope ones): what the candidate features need."""

    def __init__(self, examples: Sequence[np.ndarray], descriptions: Sequence[np.ndarray], texts: list[list[str]]):
        t = len(examples)
        self.model = IntentModel.fit(list(range(t)), examples, descriptions)  # embedding-only, as the server's folds
        self.profile = acc.TemplateProfile.fit(self.model)
        raw = normalise(np.vstack(examples).astype(np.float64))
        owner = np.repeat(np.arange(t), [len(e) for e in examples])
        self.means = np.stack([raw[owner == i].mean(0) for i in range(t)])
        d = raw.shape[1]
        resid = raw - self.means[owner]
        cov = resid.T @ resid / max(1, len(raw) - t)
        self.precisions = []
        for a in SHRINKAGE:
            p = np.linalg.inv((1 - a) * cov + a * np.trace(cov) / d * np.eye(d))
            self.precisions.append((p, np.einsum("td,de,te->t", self.means, p, self.means)))
        self.global_mean = raw.mean(0)
        g = raw - self.global_mean
        gcov = g.T @ g / max(1, len(raw) - 1)
        self.global_precision = np.linalg.inv(0.6 * gcov + 0.4 * np.trace(gcov) / d * np.eye(d))
        p, _ = self.precisions[1]
        own = np.einsum("nd,de,ne->n", resid, p, resid)
        self.own_distance = np.array([own[owner == i].mean() for i in range(t)])
        nearest: list[np.ndarray | None] = []
        for i in range(t):
            block = raw[owner == i]
            if len(block) > 1:
                sims = block @ block.T
                np.fill_diagonal(sims, -1.0)
                nearest.append(sims.max(1))
            else:
                nearest.append(None)
        pooled = np.concatenate([n for n in nearest if n is not None] or [np.array([0.5, 0.6])])
        spread = float(pooled.std())
        self.loo_mean = np.array([n.mean() if n is not None else pooled.mean() for n in nearest])
        # a template's spread, shrunk toward the pooled one with the weight of 4 examples
        self.loo_std = np.array(
            [np.sqrt((n.var() * len(n) + 4 * spread**2) / (len(n) + 4)) if n is not None else spread for n in nearest]
        )
        self.vocabulary = [set().union(*(words(x) for x in group)) for group in texts]
        self.df: dict[str, int] = {}
        for vocabulary in self.vocabulary:
            for w in vocabulary:
                self.df[w] = self.df.get(w, 0) + 1
        self.descriptions = normalise(np.vstack(descriptions).astype(np.float64))
        self.centroids = normalise(self.means)

    def features(self, q: np.ndarray, text: str, chosen: int) -> dict[str, float]:
        m = self.model
        analysis = m.analyse(q)
        out = dict(zip(acc.FEATURES, acc.features(m, analysis, chosen, self.profile).tolist(), strict=True))
        q64 = q.astype(np.float64)
        others = np.arange(len(self.means)) != chosen

        def margin(values: np.ndarray) -> float:
            return float(values[chosen] - values[others].max()) if others.any() else 0.0

        logits = analysis.regression.astype(np.float64)
        out["energy"] = float(np.log(np.exp(logits - logits.max()).sum()) + logits.max())
        out["logit_chosen"] = float(logits[chosen])
        out["logit_margin"] = margin(logits)
        ranked = np.sort(analysis.raw_sims)[::-1]
        out["global_top1"] = float(ranked[0])
        out["global_top5"] = float(ranked[:5].mean())
        out["global_5th"] = float(ranked[min(4, len(ranked) - 1)])
        nearest = float(analysis.knn_max[chosen])
        out["nearest_z"] = (nearest - self.loo_mean[chosen]) / max(float(self.loo_std[chosen]), 1e-3)
        start, count = int(m.starts[chosen]), int(m.counts[chosen])
        block = analysis.raw_sims[start : start + count]
        out["share_close"] = float((block >= self.loo_mean[chosen] - self.loo_std[chosen]).mean())
        out["chosen_mean_cos"] = float(block.mean())
        description = self.descriptions @ q64
        out["desc_cos"], out["desc_margin"] = float(description[chosen]), margin(description)
        centroid = self.centroids @ q64
        out["centroid_cos"], out["centroid_margin"] = float(centroid[chosen]), margin(centroid)
        for a, (p, mpm) in zip(SHRINKAGE, self.precisions, strict=True):
            qp = q64 @ p
            distance = float(qp @ q64) - 2 * (self.means @ qp) + mpm
            out[f"maha{a}_chosen"] = float(distance[chosen])
            out[f"maha{a}_min"] = float(distance.min())
            out[f"maha{a}_margin"] = margin(-distance)  # nearest other class minus the chosen one
        g = q64 - self.global_mean
        out["maha_global"] = float(g @ self.global_precision @ g)
        out["maha_relative"] = out[f"maha{SHRINKAGE[1]}_chosen"] - out["maha_global"]
        out["maha_rel_own"] = out[f"maha{SHRINKAGE[1]}_chosen"] - float(self.own_distance[chosen])
        t = len(self.vocabulary)
        idf = {w: float(np.log((1 + t) / (1 + self.df.get(w, 0))) + 1) for w in words(text)}
        total = sum(idf.values()) or 1.0
        mine = self.vocabulary[chosen]
        elsewhere = [v for w, v in idf.items() if w in self.df and w not in mine]
        out["lex_unseen_chosen"] = sum(v for w, v in idf.items() if w not in mine) / total
        out["lex_unseen_all"] = sum(v for w, v in idf.items() if w not in self.df) / total
        out["lex_elsewhere"] = sum(elsewhere) / total  # words other templates use and the chosen one does not
        out["lex_max_unseen_idf"] = max(elsewhere, default=0.0)
        return out


def simulate(scorer: ra.Scorer, folds: int, seed: int) -> tuple[list[dict[str, float]], np.ndarray, np.ndarray]:
    """acceptance.simulate's folds and draws, with every candidate feature (and the texts they need)."""
    rng = np.random.default_rng(seed)
    n = len(scorer.keys)
    folds = max(2, min(folds, n))
    fold_of = rng.permutation(n) % folds
    total = sum(len(e) for e in scorer.examples)
    keep_share = min(1.0, acc.MAX_SIMULATED / max(1.0, total * (2 - 1 / folds)))
    rows, right, uncovered = [], [], []
    for f in range(folds):
        kept = [i for i in range(n) if fold_of[i] != f]
        k_examples, k_descriptions, k_texts = [], [], []
        questions: list[tuple[np.ndarray, str, int | None]] = []
        for pos, i in enumerate(kept):
            vectors, texts = scorer.examples[i], scorer.texts[i]
            out = set(rng.permutation(len(vectors))[: acc.held_out_examples(len(vectors), folds)].tolist())
            keep = [j for j in range(len(vectors)) if j not in out]
            k_examples.append(vectors[keep])
            k_descriptions.append(scorer.descriptions[i])
            k_texts.append([texts[0], *[texts[1 + j] for j in keep]])
            questions += [(vectors[j], texts[1 + j], pos) for j in sorted(out)]
        for left_out in np.flatnonzero(fold_of == f).tolist():
            questions += [(v, scorer.texts[left_out][1 + j], None) for j, v in enumerate(scorer.examples[left_out])]
        if keep_share < 1.0:
            questions = [questions[j] for j in np.flatnonzero(rng.random(len(questions)) < keep_share)]
        space = Space(k_examples, k_descriptions, k_texts)
        for vector, text, truth in questions:
            chosen = int(np.argmax(space.model.analyse(vector).fused))
            rows.append(space.features(vector, text, chosen))
            right.append(truth is not None and chosen == truth)
            uncovered.append(truth is None)
    return rows, np.array(right), np.array(uncovered)


def build(k: int | None, seed: int, vec: ra.Vectors, folds: int, cache: Path) -> dict[str, np.ndarray]:
    path = cache / f"features-k{k or 'all'}-s{seed}.npz"
    if path.exists():
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    examples, test, oos = ra.split(k, seed)
    texts = [t for t, _ in test]
    q = vec(texts)
    scorer = ra.Scorer({i: e for i, e in examples.items() if i not in oos}, vec)
    chosen, combined, _ = scorer.route(texts, q)
    space = Space(scorer.examples, scorer.descriptions, scorer.texts)
    test_rows = [space.features(q[n], texts[n], int(chosen[n])) for n in range(len(texts))]
    sim_rows, sim_right, sim_uncovered = simulate(scorer, folds, seed)
    names = sorted(test_rows[0])
    out = {
        "names": np.array(names),
        "test_x": np.array([[r[n] for n in names] for r in test_rows]),
        "test_in_scope": np.array([i not in oos for _, i in test]),
        "test_right": np.array([scorer.intents[c] == i for c, (_, i) in zip(chosen, test, strict=True)]),
        "combined": combined,
        "sim_x": np.array([[r[n] for n in names] for r in sim_rows]),
        "sim_right": sim_right,
        "sim_uncovered": sim_uncovered,
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def logistic(x: np.ndarray, right: np.ndarray, uncovered: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The server's fit (acceptance.AcceptanceModel.fit) on any feature matrix."""
    model = acc.AcceptanceModel.fit(acc.Simulation(x.astype(np.float32), right, uncovered))
    return model.probabilities


def auroc(score: np.ndarray, positive: np.ndarray, negative: np.ndarray) -> float:
    a, b = score[positive], score[negative]
    if not len(a) or not len(b):
        return 0.0
    both = np.concatenate([a, b])
    order = np.argsort(both, kind="stable")
    ranks = np.empty(len(both))
    ranks[order] = np.arange(1, len(both) + 1)
    for value in np.unique(both):  # ties share their mean rank
        tied = both == value
        ranks[tied] = ranks[tied].mean()
    return float((ranks[: len(a)].sum() - len(a) * (len(a) + 1) / 2) / (len(a) * len(b)))


def measure(score: np.ndarray, d: dict[str, np.ndarray], bar: float, default: float | None) -> dict[str, float]:
    half = len(score) // 2
    obs = [
        Observation(("a", "t") if i else None, ("a", "t") if r else ("a", "other"), float(s), None)
        for i, r, s in zip(d["test_in_scope"], d["test_right"], score, strict=True)
    ]
    fitted = fit_threshold(obs[:half])
    held = evaluate(obs[half:], DecisionRule(fitted.threshold))
    out = {
        "validation_auroc": auroc(score[:half], d["test_right"][:half], ~d["test_in_scope"][:half]),
        "in_scope": held.in_scope_accuracy,
        "rejection": held.out_of_scope_rejection or 0.0,
        "overall": held.accuracy,
    }
    if default is not None:
        own = evaluate(obs[half:], DecisionRule(default))
        out |= {
            "self_in_scope": own.in_scope_accuracy,
            "self_rejection": own.out_of_scope_rejection or 0.0,
            "self_overall": own.accuracy,
        }
    s, ins, right = score[half:], d["test_in_scope"][half:], d["test_right"][half:]
    best = 0.0
    for threshold in np.unique(s):
        executes = s >= threshold
        if (executes & right)[ins].mean() >= bar:
            best = max(best, float((~executes)[~ins].mean()))
    return {key: round(v, 4) for key, v in (out | {"oracle_rejection": best}).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", action="append")
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--folds", type=int, default=acc.FOLDS)
    parser.add_argument("--supervised", action="store_true")
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/abstain/vectors.npz"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/abstain/features"))
    args = parser.parse_args()
    vec = ra.Vectors(args.vectors)
    for k_arg in args.k or ["8", "all"]:
        k = None if k_arg == "all" else int(k_arg)
        for seed in args.seed or [0, 1, 2]:
            d = build(k, seed, vec, args.folds, args.cache)
            names = d["names"].tolist()
            label = {"k": f"k={k or 'all'}", "seed": seed}
            print(json.dumps(label | {"set": "combined_score"} | measure(d["combined"], d, BARS[k], None)), flush=True)
            for name, subset in SETS.items():
                cols = [names.index(f) for f in subset]
                p = logistic(d["sim_x"][:, cols], d["sim_right"], d["sim_uncovered"])(d["test_x"][:, cols])
                result = measure(p, d, BARS[k], acc.BAYES_THRESHOLD)
                print(json.dumps(label | {"set": name} | result), flush=True)
            if args.supervised:
                cols = [i for i, n in enumerate(names) if n != "agrees_fused"]
                half = len(d["combined"]) // 2
                x = d["test_x"][:, cols]
                p = logistic(x[:half], d["test_right"][:half], ~d["test_in_scope"][:half])(x)
                result = measure(p, d, BARS[k], None)
                print(json.dumps(label | {"set": "diagnostic_supervised_on_validation_half"} | result), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Research: an in-scope (acceptance) test separate from ranking, on BANKING77, simulated in numpy.

Replays bench_accuracy.py's protocol (same seeds, splits, 10 intents held out as out-of-scope,
threshold fitted on the first half of the shuffled test questions and measured on the other half)
for the demo composite's scoring (embedding 0.4 + intent model 1.0, candidates = top 3 per child of
7 children), without the HTTP path: the texts are embedded once with the project's MiniLM encoder and
cached under /tmp (--vectors; embedded on first use, ~1 min). Token views are left out (they need a
second encoder pass per text).

Prints one JSON object per (k, seed): top-1, today's threshold on the combined score (labelled fit),
the acceptance model's labelled fit and its self-calibrated default (fitted on the templates alone).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from server.intent import acceptance as acc  # noqa: E402
from server.intent.intent_model import IntentModel  # noqa: E402
from server.routing.decision import DecisionRule  # noqa: E402
from server.routing.fitting import Observation, evaluate, fit_threshold  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "banking77"
CHILDREN = 7
OOS_INTENTS = 10
PER_CHILD = 3
EMBEDDING_WEIGHT = 0.4


def read_csv(path: Path) -> list[tuple[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [(row["text"], row["category"]) for row in csv.DictReader(fh)]


def embed_once(path: Path) -> None:
    """Every BANKING77 text and intent description, embedded with the project's MiniLM encoder."""
    from server.embedding.factory import shared_minilm
    from server.embedding.minilm import MiniLMEmbedder

    texts = {t for f in ("train.csv", "test.csv") for t, _ in read_csv(DATA / f)}
    texts |= {i.replace("_", " ") for _, i in read_csv(DATA / "train.csv")}
    ordered = sorted(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    vectors = MiniLMEmbedder(shared_minilm(path.parent / "models"), batch_size=64).embed_sync(ordered)
    np.savez(path, texts=np.array(ordered, dtype=object), vectors=vectors)


class Vectors:
    def __init__(self, path: Path) -> None:
        if not path.exists():
            embed_once(path)
        data = np.load(path, allow_pickle=True)
        self.index = {t: i for i, t in enumerate(data["texts"].tolist())}
        self.vectors = data["vectors"].astype(np.float32)

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.vectors[[self.index[t] for t in texts]]


def split(k: int | None, seed: int):
    """Exactly bench_accuracy.run's random draws."""
    rng = random.Random(seed)
    train, test = read_csv(DATA / "train.csv"), read_csv(DATA / "test.csv")
    by_intent: dict[str, list[str]] = defaultdict(list)
    for text, intent in train:
        by_intent[intent].append(text)
    examples = {i: (rng.sample(t, min(k, len(t))) if k else t) for i, t in sorted(by_intent.items())}
    rng.shuffle(test)
    oos = set(rng.sample(sorted(examples), OOS_INTENTS))
    return examples, test, oos


class Scorer:
    """The demo composite's ranking over a template set, plus the acceptance features of its choice."""

    def __init__(self, examples: dict[str, list[str]], vec: Vectors) -> None:
        self.intents = sorted(examples)
        self.keys = self.intents
        self.examples = [vec(examples[i]) for i in self.intents]
        self.descriptions = [vec([i.replace("_", " ")])[0] for i in self.intents]
        self.texts = [[i.replace("_", " "), *examples[i]] for i in self.intents]
        self.model = IntentModel.fit(self.intents, self.examples, self.descriptions, self.texts)
        # store texts: description + examples, per template
        self.store = [vec(t) for t in self.texts]
        self.child = np.array([n % CHILDREN for n in range(len(self.intents))])
        self.profile = acc.TemplateProfile.fit(self.model)

    def route(self, texts: list[str], q: np.ndarray):
        """(chosen template index, combined score, acceptance features) per question."""
        emb = np.stack([(q @ s.T).max(1) for s in self.store], 1)  # store hit score per template
        candidate = np.zeros_like(emb, bool)
        for c in range(CHILDREN):
            cols = np.flatnonzero(self.child == c)
            top = cols[np.argsort(-emb[:, cols], 1)[:, :PER_CHILD]]
            np.put_along_axis(candidate, top, True, 1)
        chosen, scores, feats = [], [], []
        for n, text in enumerate(texts):
            analysis = self.model.analyse(q[n], text)
            confidence = self.model.calibrated(analysis.fused, analysis.best_cosine)
            combined = (EMBEDDING_WEIGHT * np.clip(emb[n], 0, 1) + confidence) / (1 + EMBEDDING_WEIGHT)
            combined = np.where(candidate[n], combined, -np.inf)
            c = int(combined.argmax())
            chosen.append(c)
            scores.append(float(combined[c]))
            plain = acc.analysis_for_acceptance(self.model, q[n])
            feats.append(acc.features(self.model, plain, c, self.profile))
        return np.array(chosen), np.array(scores), np.array(feats)


def run(k: int | None, seed: int, vec: Vectors, folds: int, prior: float) -> dict:
    t0 = time.perf_counter()
    examples, test, oos = split(k, seed)
    label = f"k={k or 'all'}"
    # top-1 on all 77 intents
    full = Scorer(examples, vec)
    texts = [t for t, _ in test]
    q = vec(texts)
    chosen, _, _ = full.route(texts, q)
    top1 = float(np.mean([full.intents[c] == i for c, (_, i) in zip(chosen, test, strict=True)]))
    # out-of-scope protocol
    in_scope = {i: e for i, e in examples.items() if i not in oos}
    scorer = Scorer(in_scope, vec)
    chosen, combined, feats = scorer.route(texts, q)
    half = len(test) // 2
    expected = [None if i in oos else i for _, i in test]
    predicted = [scorer.intents[c] for c in chosen]

    def observations(score: np.ndarray) -> list[Observation]:
        return [
            Observation(None if e is None else ("a", e), ("a", p), float(s), None)
            for e, p, s in zip(expected, predicted, score, strict=True)
        ]

    def fit_measure(score: np.ndarray, default: float | None = None) -> dict:
        obs = observations(score)
        fitted = fit_threshold(obs[:half])
        held = evaluate(obs[half:], DecisionRule(fitted.threshold))
        out = {
            "threshold": round(fitted.threshold, 4),
            "in_scope": round(held.in_scope_accuracy, 4),
            "rejection": round(held.out_of_scope_rejection or 0.0, 4),
            "overall": round(held.accuracy, 4),
        }
        if default is not None:
            d = evaluate(obs[half:], DecisionRule(default))
            out |= {
                "default_threshold": default,
                "default_in_scope": round(d.in_scope_accuracy, 4),
                "default_rejection": round(d.out_of_scope_rejection or 0.0, 4),
                "default_overall": round(d.accuracy, 4),
            }
        return out

    t1 = time.perf_counter()
    sim = acc.simulate(scorer.keys, scorer.examples, scorer.descriptions, folds=folds, seed=seed)
    model = acc.AcceptanceModel.fit(sim, prior)
    probability = model.probabilities(feats)
    return {
        "k": label,
        "seed": seed,
        "top1": round(top1, 4),
        "combined_score": fit_measure(combined),
        "acceptance": fit_measure(probability, model.default_threshold),
        "self_calibration_expected": model.expectation.to_json(),
        "weights": dict(zip(acc.FEATURES, np.round(model.w, 3).tolist(), strict=True)),
        "simulated": {"covered": int((~sim.uncovered).sum()), "uncovered": int(sim.uncovered.sum())},
        "seconds": {"routing": round(t1 - t0, 1), "acceptance_fit": round(time.perf_counter() - t1, 1)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", action="append")
    parser.add_argument("--seed", type=int, action="append")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--prior", type=float, default=acc.DEFAULT_OUT_OF_SCOPE_SHARE)
    parser.add_argument("--vectors", type=Path, default=Path("/tmp/abstain/vectors.npz"))
    args = parser.parse_args()
    vec = Vectors(args.vectors)
    for k in args.k or ["8", "all"]:
        for seed in args.seed or [0, 1, 2]:
            print(json.dumps(run(None if k == "all" else int(k), seed, vec, args.folds, args.prior)), flush=True)


if __name__ == "__main__":
    main()

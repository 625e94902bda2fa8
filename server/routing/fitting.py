"""Fit the confidence threshold (and ambiguity margin) from labelled questions.

Each labelled question is routed once with the threshold at zero; the fit then replays the decision
for every candidate threshold/margin, so it costs one routing pass however fine the grid.
A question labelled with no template is correct when the router abstains.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Observation:
    expected: tuple[str, str] | None  # (adapter, template) or None for out-of-scope
    predicted: tuple[str, str] | None  # best candidate, before any threshold
    score: float  # its score
    runner_up: float | None = None  # second-best score


@dataclass(frozen=True)
class Fit:
    threshold: float
    margin: float | None
    accuracy: float
    in_scope_accuracy: float
    out_of_scope_rejection: float | None
    n: int

    def to_json(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def evaluate(obs: Sequence[Observation], threshold: float, margin: float | None = None) -> Fit:
    correct = in_correct = in_total = oos_rejected = oos_total = 0
    for o in obs:
        routes = o.predicted is not None and o.score >= threshold
        if routes and margin is not None and o.runner_up is not None and o.score - o.runner_up < margin:
            routes = False  # ambiguous: asks instead of answering
        if o.expected is None:
            oos_total += 1
            oos_rejected += not routes
            correct += not routes
        else:
            in_total += 1
            ok = routes and o.predicted == o.expected
            in_correct += ok
            correct += ok
    n = len(obs)
    return Fit(
        threshold,
        margin,
        correct / n if n else 0.0,
        in_correct / in_total if in_total else 0.0,
        oos_rejected / oos_total if oos_total else None,
        n,
    )


def fit_threshold(obs: Sequence[Observation], margins: Sequence[float | None] = (None,)) -> Fit:
    """The threshold (and margin) with the best overall accuracy; ties go to the lower threshold."""
    if not obs:
        raise ValueError("no labelled questions")
    scores = sorted({round(o.score, 6) for o in obs} | {0.0})
    candidates = np.unique(np.clip(np.array(scores + [s + 1e-6 for s in scores]), 0.0, 1.0))
    best: Fit | None = None
    for margin in margins:
        for threshold in candidates:
            fit = evaluate(obs, float(threshold), margin)
            if best is None or fit.accuracy > best.accuracy + 1e-12:
                best = fit
    assert best is not None
    return best

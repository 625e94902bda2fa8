"""Fit the confidence threshold (and ambiguity margin) from labelled questions.

Each labelled question is routed once with the threshold at zero. The grid search judges every
candidate threshold/margin over all questions at once with the rule's own predicates
(routing/decision.py: `clears`, `too_close`), so it costs one routing pass however fine the grid; what
it reports (`evaluate`, `misses`) replays the live `verdict` question by question, as semantic-router's
evaluate calls the router itself. A question labelled with no template is correct when the router does
not execute anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..api.outcome import DecisionReason
from .decision import DecisionRule, Verdict, clears, too_close, verdict


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


@dataclass(frozen=True)
class _Arrays:
    """The observations as arrays, built once per fit."""

    has_best: np.ndarray
    score: np.ndarray
    runner_up: np.ndarray  # -inf where there is none: never too close
    right: np.ndarray  # the best candidate is the expected template
    in_scope: np.ndarray

    @classmethod
    def of(cls, obs: Sequence[Observation]) -> _Arrays:
        return cls(
            has_best=np.array([o.predicted is not None for o in obs], dtype=bool),
            score=np.array([o.score for o in obs], dtype=float),
            runner_up=np.array([-np.inf if o.runner_up is None else o.runner_up for o in obs], dtype=float),
            right=np.array([o.predicted is not None and o.predicted == o.expected for o in obs], dtype=bool),
            in_scope=np.array([o.expected is not None for o in obs], dtype=bool),
        )


def _executes(a: _Arrays, rule: DecisionRule) -> np.ndarray:
    executes = a.has_best & clears(a.score, rule.confidence_threshold)
    if rule.on_ambiguity == "ask":  # an ambiguous pair asks instead of answering
        executes &= ~too_close(a.score, a.runner_up, rule.ambiguity_margin)
    return executes


def executes(obs: Sequence[Observation], rule: DecisionRule) -> np.ndarray:
    """Per question, whether the rule with these settings runs its best candidate (the grid's array form)."""
    return _executes(_Arrays.of(obs), rule)


def replay(obs: Sequence[Observation], rule: DecisionRule) -> list[Verdict]:
    """The live decision's verdict on each question under this rule."""
    return [verdict(o.score if o.predicted is not None else None, o.runner_up, rule) for o in obs]


def _evaluate(a: _Arrays, rule: DecisionRule, verdicts: Sequence[Verdict]) -> Fit:
    executes = np.array([v.execute for v in verdicts], dtype=bool)
    in_ok = a.in_scope & executes & a.right
    out_ok = ~a.in_scope & ~executes
    n, n_in = len(a.score), int(a.in_scope.sum())
    n_out = n - n_in
    return Fit(
        rule.confidence_threshold,
        rule.ambiguity_margin,
        float(in_ok.sum() + out_ok.sum()) / n if n else 0.0,
        float(in_ok.sum()) / n_in if n_in else 0.0,
        float(out_ok.sum()) / n_out if n_out else None,
        n,
    )


def evaluate(obs: Sequence[Observation], rule: DecisionRule) -> Fit:
    """Accuracy of the decision rule with these settings over the observations."""
    return _evaluate(_Arrays.of(obs), rule, replay(obs, rule))


GRID_CHUNK = 512  # thresholds judged together: a (thresholds x questions) boolean matrix per chunk


def fit_threshold(
    obs: Sequence[Observation], margins: Sequence[float | None] = (None,), on_ambiguity: str = "ask"
) -> Fit:
    """The threshold (and margin) with the best overall accuracy; ties go to the first margin, then the
    lower threshold. Every grid threshold is judged by `clears` itself, a chunk of thresholds at a time
    over all the questions (one matrix instead of one pass per threshold)."""
    if not obs:
        raise ValueError("no labelled questions")
    a = _Arrays.of(obs)
    scores = np.unique(np.round(a.score, 6))
    grid = np.unique(np.clip(np.concatenate([[0.0], scores, scores + 1e-6]), 0.0, 1.0))
    base = DecisionRule(0.0, None, "best" if on_ambiguity == "best" else "ask")
    best: tuple[int, float, float | None] | None = None  # (correct answers, threshold, margin)
    for margin in margins:
        # whether a question may run at all under this margin, the threshold aside
        open_ = _executes(a, replace(base, confidence_threshold=-np.inf, ambiguity_margin=margin))
        wanted, unwanted = open_ & a.in_scope & a.right, open_ & ~a.in_scope
        n_out = int((~a.in_scope).sum())
        for lo in range(0, len(grid), GRID_CHUNK):
            cut = grid[lo : lo + GRID_CHUNK]
            passes = clears(a.score[None, :], cut[:, None])  # (thresholds, questions)
            correct = (passes & wanted).sum(axis=1) + n_out - (passes & unwanted).sum(axis=1)
            i = int(np.argmax(correct))  # the first (lowest) threshold with the most correct answers
            if best is None or correct[i] > best[0]:
                best = (int(correct[i]), float(cut[i]), margin)
    assert best is not None
    chosen = replace(base, confidence_threshold=best[1], ambiguity_margin=best[2])
    return _evaluate(a, chosen, replay(obs, chosen))


# Why a question is counted wrong under a rule (fit-thresholds lists them with what to change, server/cli/fit_report.py)
WRONG_TEMPLATE = "wrong_template"  # in scope, answered by another template
BELOW_THRESHOLD = "below_threshold"  # in scope, its best candidate scored under the threshold: not answered
AMBIGUOUS = "ambiguous"  # in scope, cleared the threshold but the runner-up was within the margin: asked instead
ANSWERED_OUT_OF_SCOPE = "answered_out_of_scope"  # no template answers it, one was run anyway


def misses(obs: Sequence[Observation], rule: DecisionRule) -> list[tuple[int, str]]:
    """(index, why) of every question the rule gets wrong, in question order: exactly the questions
    `evaluate` does not count as correct."""
    a = _Arrays.of(obs)
    verdicts = replay(obs, rule)
    runs = np.array([v.execute for v in verdicts], dtype=bool)
    asked = np.array([v.reason is DecisionReason.AMBIGUOUS for v in verdicts], dtype=bool)
    why = np.full(len(obs), "", dtype=object)
    why[a.in_scope & runs & ~a.right] = WRONG_TEMPLATE
    why[a.in_scope & ~runs & ~asked] = BELOW_THRESHOLD
    why[a.in_scope & ~runs & asked] = AMBIGUOUS
    why[~a.in_scope & runs] = ANSWERED_OUT_OF_SCOPE
    return [(i, str(w)) for i, w in enumerate(why) if w]


def tidy_threshold(obs: Sequence[Observation], fit: Fit, on_ambiguity: str = "ask") -> float:
    """The fitted threshold with as few decimals as keep its accuracy (3 to 6, rounded up: the fit picks
    the lowest threshold of its best run, so rounding up stays inside the run), for writing into YAML."""
    rule = DecisionRule(fit.threshold, fit.margin, "best" if on_ambiguity == "best" else "ask")
    for decimals in (3, 4, 5, 6):
        scale = 10**decimals
        value = float(np.clip(np.ceil(fit.threshold * scale - 1e-9) / scale, 0.0, 1.0)) + 0.0  # never -0.0
        if evaluate(obs, replace(rule, confidence_threshold=value)).accuracy == fit.accuracy:
            return value
    return fit.threshold

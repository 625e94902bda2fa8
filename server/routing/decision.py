"""Rank candidates and decide: route, abstain below the threshold, or flag an ambiguous pair.

The accept/abstain rule lives here once. `decide` applies it to a ranked candidate list;
`verdict` is the same rule on bare scores, so `fit-thresholds` (routing/fitting.py), test_routing's
`above_threshold` flags and `/v1/query` all replay exactly what a live decision does. The two
predicates work on floats and on numpy arrays alike, which is what lets the fit replay the rule
for thousands of questions at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..api.outcome import DecisionReason as Reason  # the wire's vocabulary, defined once there
from ..api.outcome import Outcome
from .candidates import Candidate
from .policy import RoutingPolicy
from .write_requests import WriteRequest


@dataclass(frozen=True)
class DecisionRule:
    """The knobs of the rule: what a composite's settings and a threshold fit vary."""

    confidence_threshold: float
    ambiguity_margin: float | None = None
    on_ambiguity: Literal["ask", "best"] = "ask"

    @classmethod
    def of(cls, policy: RoutingPolicy) -> DecisionRule:
        return cls(policy.confidence_threshold, policy.ambiguity_margin, policy.on_ambiguity)


def clears(score: Any, threshold: Any) -> Any:
    """A score at or above the threshold may route (floats or broadcastable arrays in, bool or bool
    array out: fit-thresholds judges a grid of thresholds against every question at once)."""
    return score >= threshold


def too_close(best: Any, other: Any, margin: float | None) -> Any:
    """`other` is within the ambiguity margin of `best` (never, with no margin configured)."""
    if margin is None:
        return best != best  # False (or an all-False array) of the right shape
    return best - other < margin


@dataclass(frozen=True)
class Verdict:
    reason: Reason
    execute: bool


def verdict(
    best: float | None,
    runner_up: float | None,
    rule: DecisionRule,
    multistage: bool = False,
    accepted: bool | None = None,
) -> Verdict:
    """The rule on the best two scores (None: no such candidate). `accepted` is the acceptance test's
    verdict on the best candidate when it ran; it then decides instead of the threshold."""
    if best is None:
        return Verdict(Reason.NO_CANDIDATES, False)
    if not (clears(best, rule.confidence_threshold) if accepted is None else accepted):
        return Verdict(Reason.NO_MATCH, False)
    if runner_up is not None and too_close(best, runner_up, rule.ambiguity_margin):
        return Verdict(Reason.AMBIGUOUS, rule.on_ambiguity == "best")
    return Verdict(Reason.ROUTED_MULTISTAGE if multistage else Reason.ROUTED, True)


@dataclass
class Decision:
    selected: Candidate | None
    reason: Reason
    execute: bool
    alternatives: list[Candidate] = field(default_factory=list)

    @property
    def outcome(self) -> Outcome:
        """What the decision alone makes of the question (the one mapping): routed when it executes, else
        ambiguous when it chose one among others too close, else no match. An answer that then runs the
        template says executed or needs_clarification instead."""
        if self.execute:
            return Outcome.ROUTED
        return Outcome.AMBIGUOUS if self.selected is not None else Outcome.NO_MATCH


def rank(candidates: list[Candidate], policy: RoutingPolicy) -> list[Candidate]:
    """Best first: score, then the tie-breaker stage's score, then config order of the child."""
    tie_stage = policy.retrieval.scoring.tie_breaker

    def key(c: Candidate) -> tuple[float, float, int]:
        tie = c.stage_score(tie_stage)
        return (-round(c.score, 9), -(tie if tie is not None else -1.0), c.source_order)

    return sorted(candidates, key=key)


def decide(ranked: list[Candidate], policy: RoutingPolicy, write_request: WriteRequest | None = None) -> Decision:
    """The rule on the ranked candidates. `write_request`: the question asked for a change and the candidates
    that cannot make it were taken out (write_requests.py); when none is left, that is the reason."""
    if not ranked and write_request is not None:
        return Decision(None, Reason.WRITE_REQUEST, False)
    rule = DecisionRule.of(policy)
    best = ranked[0] if ranked else None
    runner_up = ranked[1].score if len(ranked) > 1 else None
    # acceptance (intent/acceptance.py): when it judged the chosen candidate, its verdict replaces the threshold
    v = verdict(best.score if best else None, runner_up, rule, policy.multistage, best.accepted if best else None)
    if best is None:
        return Decision(None, v.reason, v.execute)
    if v.reason is Reason.NO_MATCH:
        return Decision(None, v.reason, v.execute, alternatives=ranked[:3])
    if v.reason is Reason.AMBIGUOUS:
        close = [c for c in ranked[1:] if too_close(best.score, c.score, rule.ambiguity_margin)]
        return Decision(best, v.reason, v.execute, alternatives=close)
    return Decision(best, v.reason, v.execute)

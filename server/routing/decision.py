"""Rank candidates and decide: route, abstain below the threshold, or flag an ambiguous pair."""

from __future__ import annotations

from dataclasses import dataclass, field

from .candidates import Candidate
from .combine import STAGE_FIELDS
from .policy import RoutingPolicy

ROUTED_MULTISTAGE = "highest_combined_score_above_threshold"
ROUTED = "highest_score_above_threshold"
NO_MATCH = "no_matches_above_threshold"
NO_CANDIDATES = "no_candidates"
AMBIGUOUS = "ambiguous"


@dataclass
class Decision:
    selected: Candidate | None
    reason: str
    execute: bool
    alternatives: list[Candidate] = field(default_factory=list)


def rank(candidates: list[Candidate], policy: RoutingPolicy) -> list[Candidate]:
    """Best first: score, then the tie-breaker stage's score, then config order of the child."""
    tie_field = STAGE_FIELDS[policy.retrieval.scoring.tie_breaker]

    def key(c: Candidate):
        tie = getattr(c, tie_field)
        return (-round(c.score, 9), -(tie if tie is not None else -1.0), c.source_order)

    return sorted(candidates, key=key)


def decide(ranked: list[Candidate], policy: RoutingPolicy) -> Decision:
    if not ranked:
        return Decision(None, NO_CANDIDATES, execute=False)
    best = ranked[0]
    # acceptance (issue 15, routing/acceptance.py): when it judged the chosen candidate, its verdict decides
    # whether to execute; otherwise the combined score against confidence_threshold does
    rejected = best.score < policy.confidence_threshold if best.accepted is None else not best.accepted
    if rejected:
        return Decision(None, NO_MATCH, execute=False, alternatives=ranked[:3])
    margin = policy.ambiguity_margin
    if margin is not None and len(ranked) > 1 and best.score - ranked[1].score < margin:
        close = [c for c in ranked[1:] if best.score - c.score < margin]
        return Decision(best, AMBIGUOUS, execute=policy.on_ambiguity == "best", alternatives=close)
    return Decision(best, ROUTED_MULTISTAGE if policy.multistage else ROUTED, execute=True)

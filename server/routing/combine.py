"""Combine stage scores: weights renormalised over the stages that produced scores."""

from __future__ import annotations

from collections.abc import Sequence

from .candidates import Candidate
from .settings import ScoringSettings

DESIGN_STAGES = ("embedding", "rerank", "string_similarity")  # the seed's weights, always listed in scoring_details


def combine(
    candidates: Sequence[Candidate],
    weights: dict[str, float],
    scoring: ScoringSettings,
    failed: frozenset[str] = frozenset(),
) -> None:
    """Set `combined_score` and `scoring_details` on each candidate.

    Stages that failed for this question take no part and the other weights are renormalised to
    sum to one, so a reranker outage leaves a meaningful combined score on the 0..1 scale instead
    of a silently shrunken one. A stage that ran but did not judge a candidate (outside the
    reranker's top_candidates) counts as 0 for it, so an unjudged candidate cannot outrank judged
    ones. With `normalize_scores`, each stage's scores are clipped into 0..1 first (cosine
    similarity can be negative).
    """
    present = [stage for stage in weights if stage not in failed]  # the same stages for every candidate
    total = sum(weights[s] for s in present)
    if total <= 0:
        for cand in candidates:
            cand.combined_score = cand.embedding_score
        return
    # the seed design's three keys, always present (0.0 for a stage that is off), then any other stage;
    # the same for every candidate of this question, so built once (read-only, shared by them)
    details: dict[str, object] = {f"{stage}_weight": weights.get(stage, 0.0) for stage in DESIGN_STAGES}
    details.update({f"{stage}_weight": w for stage, w in weights.items() if stage not in DESIGN_STAGES})
    details["effective_weights"] = {s: round(weights[s] / total, 4) for s in present}
    shares = [(stage, weights[stage] / total) for stage in present]
    clip = scoring.normalize_scores
    for cand in candidates:
        value = 0.0
        for stage, share in shares:
            score = cand.stage_score(stage) or 0.0
            if clip:
                score = min(1.0, max(0.0, score))
            value += share * score
        cand.combined_score = value
        cand.scoring_details = details

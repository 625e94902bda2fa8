"""Ranking and decisions: threshold, ambiguity margin (ask | best), tie-breaker, config-order ties."""

from __future__ import annotations

import pytest

from server.routing.candidates import Candidate
from server.routing.decision import AMBIGUOUS, NO_CANDIDATES, NO_MATCH, ROUTED, ROUTED_MULTISTAGE, decide, rank
from server.routing.policy import RoutingPolicy
from server.routing.settings import CompositeRetrievalSettings, ScoringSettings
from server.templates import Template


def cand(
    adapter: str,
    tid: str,
    combined: float,
    emb: float = 0.5,
    rerank: float | None = None,
    ss: float | None = None,
    order: int = 0,
) -> Candidate:
    template = Template(id=tid, description=tid, body_key="sql", body="SELECT 1")
    return Candidate(
        adapter,
        template,
        emb,
        source_order=order,
        rerank_score=rerank,
        string_similarity_score=ss,
        combined_score=combined,
    )


def policy(tie_breaker: str = "embedding", **kw: object) -> RoutingPolicy:
    retrieval = CompositeRetrievalSettings(scoring=ScoringSettings(tie_breaker=tie_breaker))
    return RoutingPolicy(confidence_threshold=kw.pop("threshold", 0.4), retrieval=retrieval, **kw)


@pytest.mark.parametrize("tie_breaker, winner", [("embedding", "a"), ("rerank", "b"), ("string_similarity", "c")])
def test_tie_breaker_picks_by_the_named_stage(tie_breaker, winner):
    cands = [
        cand("x", "a", 0.7, emb=0.9, rerank=0.1, ss=0.2, order=0),
        cand("x", "b", 0.7, emb=0.5, rerank=0.9, ss=0.1, order=1),
        cand("x", "c", 0.7, emb=0.4, rerank=0.2, ss=0.9, order=2),
    ]
    assert rank(cands, policy(tie_breaker))[0].template.id == winner


def test_full_tie_goes_to_first_child_in_config_order():
    first = cand("hr", "t", 0.7, emb=0.6, order=0)
    second = cand("hr_twin", "t", 0.7, emb=0.6, order=1)
    assert rank([second, first], policy())[0].adapter == "hr"
    first.source_order, second.source_order = 1, 0
    assert rank([second, first], policy())[0].adapter == "hr_twin"


def test_higher_score_wins_over_tie_breaker():
    ranked = rank([cand("x", "low", 0.6, emb=0.99), cand("x", "high", 0.61, emb=0.1)], policy())
    assert [c.template.id for c in ranked] == ["high", "low"]


def test_abstains_below_threshold_and_lists_best_candidates():
    ranked = rank([cand("x", f"t{i}", 0.3 - i / 100) for i in range(5)], policy())
    d = decide(ranked, policy())
    assert (d.selected, d.reason, d.execute) == (None, NO_MATCH, False)
    assert [c.template.id for c in d.alternatives] == ["t0", "t1", "t2"]


def test_no_candidates():
    d = decide([], policy())
    assert (d.selected, d.reason, d.execute) == (None, NO_CANDIDATES, False)


def test_reason_says_whether_multistage_scoring_chose():
    ranked = [cand("x", "t", 0.8)]
    assert decide(ranked, policy()).reason == ROUTED_MULTISTAGE
    plain = RoutingPolicy(confidence_threshold=0.4)  # embedding only
    assert decide(ranked, plain).reason == ROUTED


@pytest.mark.parametrize("on_ambiguity, execute", [("ask", False), ("best", True)])
def test_ambiguity_margin(on_ambiguity, execute):
    ranked = rank([cand("hr", "a", 0.80), cand("sales", "b", 0.78), cand("hr", "c", 0.70)], policy())
    d = decide(ranked, policy(ambiguity_margin=0.05, on_ambiguity=on_ambiguity))
    assert d.reason == AMBIGUOUS and d.execute is execute
    assert d.selected.template.id == "a"
    assert [c.template.id for c in d.alternatives] == ["b"]  # c is 0.10 behind: not close


def test_margin_wider_than_the_gap_is_needed():
    ranked = rank([cand("hr", "a", 0.80), cand("sales", "b", 0.70)], policy())
    assert decide(ranked, policy(ambiguity_margin=0.05)).reason == ROUTED_MULTISTAGE
    assert decide(ranked, policy(ambiguity_margin=0.15)).reason == AMBIGUOUS
    assert decide(ranked, policy()).reason == ROUTED_MULTISTAGE  # no margin configured: never ambiguous


def test_the_acceptance_verdict_decides_over_the_combined_score():
    # the combined score is above the threshold, but the acceptance test says no: abstain
    rejected = cand("a", "t1", 0.9)
    rejected.acceptance, rejected.acceptance_threshold = 0.2, 0.5
    d = decide([rejected], policy())
    assert d.reason == NO_MATCH and not d.execute and d.selected is None
    # below confidence_threshold, but accepted: route
    accepted = cand("a", "t1", 0.1)
    accepted.acceptance, accepted.acceptance_threshold = 0.7, 0.5
    d = decide([accepted], policy())
    assert d.execute and d.selected is accepted
    # not judged (acceptance off or unavailable): the combined score against the threshold, as before
    assert not decide([cand("a", "t1", 0.1)], policy()).execute

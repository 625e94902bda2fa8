"""Ranking and decisions: threshold, ambiguity margin (ask | best), tie-breaker, config-order ties."""

from __future__ import annotations

import pytest

from server.routing.candidates import Candidate
from server.routing.decision import DecisionRule, Reason, decide, rank, verdict
from server.routing.fitting import Observation, evaluate, fit_threshold
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
    stages = {k: v for k, v in (("rerank", rerank), ("string_similarity", ss)) if v is not None}
    return Candidate(adapter, template, emb, source_order=order, stage_scores=stages, combined_score=combined)


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
    assert (d.selected, d.reason, d.execute) == (None, Reason.NO_MATCH, False)
    assert [c.template.id for c in d.alternatives] == ["t0", "t1", "t2"]


def test_no_candidates():
    d = decide([], policy())
    assert (d.selected, d.reason, d.execute) == (None, Reason.NO_CANDIDATES, False)


def test_reason_says_whether_multistage_scoring_chose():
    ranked = [cand("x", "t", 0.8)]
    assert decide(ranked, policy()).reason == Reason.ROUTED_MULTISTAGE
    plain = RoutingPolicy(confidence_threshold=0.4)  # embedding only
    assert decide(ranked, plain).reason == Reason.ROUTED


@pytest.mark.parametrize("on_ambiguity, execute", [("ask", False), ("best", True)])
def test_ambiguity_margin(on_ambiguity, execute):
    ranked = rank([cand("hr", "a", 0.80), cand("sales", "b", 0.78), cand("hr", "c", 0.70)], policy())
    d = decide(ranked, policy(ambiguity_margin=0.05, on_ambiguity=on_ambiguity))
    assert d.reason == Reason.AMBIGUOUS and d.execute is execute
    assert d.selected.template.id == "a"
    assert [c.template.id for c in d.alternatives] == ["b"]  # c is 0.10 behind: not close


def test_margin_wider_than_the_gap_is_needed():
    ranked = rank([cand("hr", "a", 0.80), cand("sales", "b", 0.70)], policy())
    assert decide(ranked, policy(ambiguity_margin=0.05)).reason == Reason.ROUTED_MULTISTAGE
    assert decide(ranked, policy(ambiguity_margin=0.15)).reason == Reason.AMBIGUOUS
    assert decide(ranked, policy()).reason == Reason.ROUTED_MULTISTAGE  # no margin configured: never ambiguous


def test_a_score_exactly_at_the_threshold_routes():
    ranked = [cand("x", "t", 0.4)]
    d = decide(ranked, policy(threshold=0.4))
    assert (d.reason, d.execute) == (Reason.ROUTED_MULTISTAGE, True)
    below = decide([cand("x", "t", 0.39999)], policy(threshold=0.4))
    assert (below.reason, below.execute) == (Reason.NO_MATCH, False)


def test_a_gap_exactly_at_the_margin_is_not_ambiguous():
    ranked = rank([cand("hr", "a", 0.75), cand("sales", "b", 0.5)], policy())
    assert decide(ranked, policy(ambiguity_margin=0.25)).reason == Reason.ROUTED_MULTISTAGE
    assert decide(ranked, policy(ambiguity_margin=0.2500001)).reason == Reason.AMBIGUOUS


OBS = [
    Observation(("a", "t1"), ("a", "t1"), 0.40, 0.10),  # right, exactly at 0.4
    Observation(("a", "t2"), ("a", "t2"), 0.80, 0.78),  # right but the runner-up is close
    Observation(("a", "t3"), ("a", "t9"), 0.60, 0.20),  # wrong template
    Observation(None, ("a", "t1"), 0.30, 0.10),  # out of scope
]


@pytest.mark.parametrize("on_ambiguity", ["ask", "best"])
def test_fitting_replays_the_live_decision_for_every_question(on_ambiguity):
    """evaluate() must count exactly what decide() would execute, threshold equality and on_ambiguity included."""
    rule = DecisionRule(0.4, 0.05, on_ambiguity)
    live_policy = policy(threshold=0.4, ambiguity_margin=0.05, on_ambiguity=on_ambiguity)
    correct = 0
    for o in OBS:
        ranked = [cand("a", o.predicted[1], o.score), cand("a", "runner", o.runner_up)]
        d = decide(ranked, live_policy)
        assert d.execute == verdict(o.score, o.runner_up, rule).execute
        correct += (d.execute and o.predicted == o.expected) if o.expected else not d.execute
    assert evaluate(OBS, rule).accuracy == correct / len(OBS)
    assert evaluate(OBS, rule).accuracy == (0.75 if on_ambiguity == "best" else 0.5)


def test_fit_threshold_respects_on_ambiguity():
    ask = fit_threshold(OBS, margins=(0.05,), on_ambiguity="ask")
    best = fit_threshold(OBS, margins=(0.05,), on_ambiguity="best")
    assert best.accuracy == 0.75 and ask.accuracy == 0.5
    assert best.threshold == pytest.approx(0.300001)  # the lowest threshold that rejects the out-of-scope question


def test_the_acceptance_verdict_decides_over_the_combined_score():
    # the combined score is above the threshold, but the acceptance test says no: abstain
    rejected = cand("a", "t1", 0.9)
    rejected.acceptance, rejected.acceptance_threshold = 0.2, 0.5
    d = decide([rejected], policy())
    assert d.reason == Reason.NO_MATCH and not d.execute and d.selected is None
    # below confidence_threshold, but accepted: route
    accepted = cand("a", "t1", 0.1)
    accepted.acceptance, accepted.acceptance_threshold = 0.7, 0.5
    d = decide([accepted], policy())
    assert d.execute and d.selected is accepted
    # not judged (acceptance off or unavailable): the combined score against the threshold, as before
    assert not decide([cand("a", "t1", 0.1)], policy()).execute


def _random_observations(n: int, seed: int) -> list[Observation]:
    import numpy as np

    rng = np.random.default_rng(seed)
    obs = []
    for _ in range(n):
        expected = None if rng.random() < 0.3 else ("a", f"t{rng.integers(5)}")
        predicted = None if rng.random() < 0.05 else ("a", f"t{rng.integers(5)}")
        score = round(float(rng.random()), 3)  # ~1,000 distinct scores: a grid of several chunks, and ties
        runner_up = None if rng.random() < 0.2 else round(score - float(rng.random()) * 0.1, 3)
        obs.append(Observation(expected, predicted, score, runner_up))
    return obs


@pytest.mark.parametrize("on_ambiguity", ["ask", "best"])
@pytest.mark.parametrize("margin", [None, 0.0, 0.02, 0.05])
def test_the_grid_form_of_the_rule_is_the_live_verdict(on_ambiguity, margin):
    """The grid judges thresholds with the rule's array form; on every question and every threshold,
    ties and scores exactly at the threshold or margin included, it runs what `verdict` runs."""
    import numpy as np

    from server.routing.fitting import executes, replay

    obs = _random_observations(400, seed=7)
    for threshold in (0.0, 0.25, 0.5, 0.5005, 0.999, 1.0):
        rule = DecisionRule(threshold, margin, on_ambiguity)
        live = np.array([v.execute for v in replay(obs, rule)])
        assert (executes(obs, rule) == live).all()


@pytest.mark.parametrize("on_ambiguity", ["ask", "best"])
def test_the_grid_fit_picks_what_evaluating_each_threshold_in_turn_picks(on_ambiguity):
    """fit_threshold judges chunks of thresholds at once; the answer is the one a loop over the same grid
    gives (first margin, then lowest threshold, on ties), on scores full of ties. The loop counts with
    the array form (its agreement with the live verdict is the test above), then the winner is evaluated."""
    import numpy as np

    from server.routing.fitting import GRID_CHUNK, executes

    obs = _random_observations(3 * GRID_CHUNK, seed=4)
    margins = (None, 0.02, 0.05)
    scores = np.unique(np.round([o.score for o in obs], 6))
    grid = np.unique(np.clip(np.concatenate([[0.0], scores, scores + 1e-6]), 0.0, 1.0))
    rule = "best" if on_ambiguity == "best" else "ask"
    right = np.array([o.predicted is not None and o.predicted == o.expected for o in obs])
    in_scope = np.array([o.expected is not None for o in obs])
    best = None  # (correct, rule)
    for margin in margins:
        for threshold in grid:
            candidate = DecisionRule(float(threshold), margin, rule)
            runs = executes(obs, candidate)
            correct = int((in_scope & runs & right).sum() + (~in_scope & ~runs).sum())
            if best is None or correct > best[0]:
                best = (correct, candidate)
    assert len(grid) > 2 * GRID_CHUNK
    assert best is not None
    assert fit_threshold(obs, margins, on_ambiguity) == evaluate(obs, best[1])

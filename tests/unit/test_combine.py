"""Combined score: weights renormalised over the stages that scored, normalize_scores, details."""

from __future__ import annotations

import pytest

from server.routing.candidates import Candidate
from server.routing.combine import combine
from server.routing.settings import ScoringSettings
from server.templates import Template

WEIGHTS = {"embedding": 0.4, "rerank": 0.4, "string_similarity": 0.2}


def cand(emb: float, rerank: float | None = None, ss: float | None = None, tid: str = "t") -> Candidate:
    template = Template(id=tid, description="d", body_key="sql", body="SELECT 1")
    stages = {k: v for k, v in (("rerank", rerank), ("string_similarity", ss)) if v is not None}
    return Candidate("a", template, emb, stage_scores=stages)


def test_all_stages_weighted_as_configured():
    c = cand(0.92, 0.95, 0.78)
    combine([c], WEIGHTS, ScoringSettings())
    assert c.combined_score == pytest.approx(0.4 * 0.92 + 0.4 * 0.95 + 0.2 * 0.78)
    assert c.score == c.combined_score


def test_failed_stage_renormalises_the_others():
    c = cand(0.9, None, 0.6)  # the reranker failed for this question
    combine([c], WEIGHTS, ScoringSettings(), failed=frozenset({"rerank"}))
    assert c.combined_score == pytest.approx((0.4 * 0.9 + 0.2 * 0.6) / 0.6)
    assert c.scoring_details["effective_weights"] == {
        "embedding": pytest.approx(0.6667, abs=1e-4),
        "string_similarity": pytest.approx(0.3333, abs=1e-4),
    }


def test_candidate_the_reranker_did_not_judge_counts_zero_for_it():
    judged, unjudged = cand(0.7, 0.9, 0.5, "judged"), cand(0.8, None, 0.5, "outside_top_candidates")
    combine([judged, unjudged], WEIGHTS, ScoringSettings())
    assert unjudged.combined_score == pytest.approx(0.4 * 0.8 + 0.2 * 0.5)
    assert judged.combined_score > unjudged.combined_score


def test_scoring_details_have_the_design_keys_even_when_a_stage_is_off():
    c = cand(0.8, None, 0.5)
    combine([c], {"embedding": 0.4, "string_similarity": 0.2}, ScoringSettings())
    details = c.scoring_details
    assert {"embedding_weight": 0.4, "rerank_weight": 0.0, "string_similarity_weight": 0.2}.items() <= details.items()


def test_embedding_weight_changes_the_combined_score():
    a, b = cand(0.9, ss=0.3), cand(0.9, ss=0.3)
    combine([a], {"embedding": 0.4, "string_similarity": 0.2}, ScoringSettings())
    combine([b], {"embedding": 0.8, "string_similarity": 0.2}, ScoringSettings())
    assert b.combined_score > a.combined_score
    assert b.combined_score == pytest.approx((0.8 * 0.9 + 0.2 * 0.3) / 1.0)


def test_normalize_scores_clips_out_of_range_scores():
    on, off = cand(-0.2, ss=0.5), cand(-0.2, ss=0.5)  # cosine similarity can be negative
    combine([on], {"embedding": 0.5, "string_similarity": 0.5}, ScoringSettings(normalize_scores=True))
    combine([off], {"embedding": 0.5, "string_similarity": 0.5}, ScoringSettings(normalize_scores=False))
    assert on.combined_score == pytest.approx(0.25)
    assert off.combined_score == pytest.approx(0.15)


def test_zero_weights_fall_back_to_embedding_score():
    c = cand(0.7, ss=0.1)
    combine([c], {"embedding": 0.0, "string_similarity": 0.0}, ScoringSettings())
    assert c.combined_score == pytest.approx(0.7)

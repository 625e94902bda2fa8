"""JSON views of a routing outcome, in the seed design's field names."""

from __future__ import annotations

from typing import Any

from ..adapters.base import Adapter
from ..routing.candidates import Candidate
from ..routing.router import Router, RoutingOutcome


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def weights_json(router: Router) -> dict[str, float]:
    w = router.weights()
    out = {"embedding_weight": w.get("embedding", 1.0)}
    if router.policy.multistage:
        out["rerank_weight"] = w.get("rerank", 0.0)
        out["string_similarity_weight"] = w.get("string_similarity", 0.0)
    if "intent_model" in w:
        out["intent_model_weight"] = w["intent_model"]
    return out


def match_json(c: Candidate, threshold: float, router: Router) -> dict[str, Any]:
    return {
        "template_id": c.template.id,
        "source_adapter": c.adapter,
        "embedding_score": _r(c.embedding_score),
        "combined_score": _r(c.score),
        "rerank_score": _r(c.rerank_score),
        "string_similarity_score": _r(c.string_similarity_score),
        **({"intent_model_score": _r(c.intent_model_score)} if c.intent_model_score is not None else {}),
        "description": c.template.description,
        "nl_examples": list(c.template.nl_examples),
        "matched_text": c.matched_text,
        "above_threshold": c.score >= threshold,
        "scoring_details": c.scoring_details or weights_json(router),
        **({"acceptance": acceptance_json(c)} if c.acceptance is not None else {}),
    }


def acceptance_json(c: Candidate) -> dict[str, Any]:
    """The in-scope test's verdict on a candidate and the features behind it (routing/acceptance.py)."""
    return {
        "probability": _r(c.acceptance),
        "threshold": _r(c.acceptance_threshold),
        "accepted": c.accepted,
        "parts": c.acceptance_parts or {},
    }


def multistage_json(c: Candidate, router: Router) -> dict[str, Any]:
    return {
        "enabled": router.policy.multistage,
        "combined_score": _r(c.score),
        "embedding_score": _r(c.embedding_score),
        "rerank_score": _r(c.rerank_score),
        "string_similarity_score": _r(c.string_similarity_score),
        **({"intent_model_score": _r(c.intent_model_score)} if c.intent_model_score is not None else {}),
        "scoring_details": weights_json(router),
    }


def composite_routing_json(outcome: RoutingOutcome, router: Router) -> dict[str, Any]:
    chosen = outcome.decision.selected
    out: dict[str, Any] = {
        "selected_adapter": chosen.adapter if chosen else None,
        "template_id": chosen.template.id if chosen else None,
        "similarity_score": _r(chosen.embedding_score) if chosen else None,
        "adapters_searched": outcome.adapters_searched,
        "total_matches_found": len(outcome.candidates),
        "adapters_failed": [f.to_json() for f in outcome.failures],
        "reason": outcome.decision.reason,
    }
    if router.policy.multistage and chosen is not None:
        out["multistage_scoring"] = multistage_json(chosen, router)
    stage_errors = [{"stage": r.stage, "error": r.error} for r in outcome.stage_reports if r.error]
    if stage_errors:
        out["stage_errors"] = stage_errors
    if outcome.decision.alternatives:
        out["alternatives"] = [alternative_json(c) for c in outcome.decision.alternatives]
    return out


def alternative_json(c: Candidate) -> dict[str, Any]:
    return {
        "adapter": c.adapter,
        "template_id": c.template.id,
        "description": c.template.description,
        "score": _r(c.score),
    }


def test_routing_json(adapter: Adapter, outcome: RoutingOutcome, router: Router) -> dict[str, Any]:
    policy = router.policy
    chosen = outcome.decision.selected
    weights = router.weights()
    decision: dict[str, Any] = {
        "would_route_to": chosen.adapter if chosen else None,
        "selected_template": chosen.template.id if chosen else None,
        "selection_score": _r(chosen.score) if chosen else None,
        "embedding_score": _r(chosen.embedding_score) if chosen else None,
        "rerank_score": _r(chosen.rerank_score) if chosen else None,
        "string_similarity_score": _r(chosen.string_similarity_score) if chosen else None,
        "reason": outcome.decision.reason,
        "would_execute": outcome.decision.execute,
    }
    top = outcome.candidates[0] if outcome.candidates else None  # ranked first, chosen or rejected
    if top is not None and top.acceptance is not None:
        decision["acceptance"] = {"template_id": top.template.id, **acceptance_json(top)}
    if outcome.decision.alternatives:
        decision["alternatives"] = [alternative_json(c) for c in outcome.decision.alternatives]
    retrieval = policy.retrieval
    return {
        "query": outcome.question,
        "adapter": adapter.name,
        "total_matches": len(outcome.candidates),
        "matches_above_threshold": sum(c.score >= policy.confidence_threshold for c in outcome.candidates),
        "all_matches": [match_json(c, policy.confidence_threshold, router) for c in outcome.candidates],
        "routing_decision": decision,
        "adapters_failed": [f.to_json() for f in outcome.failures],
        "stage_errors": [{"stage": r.stage, "error": r.error} for r in outcome.stage_reports if r.error],
        "timings_ms": outcome.timings_ms,
        "configuration": {
            "confidence_threshold": policy.confidence_threshold,
            "adapters_searched": outcome.adapters_searched,
            "multistage_enabled": policy.multistage,
            "reranking_enabled": retrieval.reranking.enabled,
            "string_similarity_enabled": retrieval.string_similarity.enabled,
            "ambiguity_margin": policy.ambiguity_margin,
            "intent_model_enabled": retrieval.intent_model.enabled,
            "acceptance_enabled": retrieval.acceptance.enabled,
            "scoring_weights": {
                "embedding": weights.get("embedding", 1.0),
                "reranking": weights.get("rerank", 0.0),
                "string_similarity": weights.get("string_similarity", 0.0),
                **({"intent_model": weights["intent_model"]} if "intent_model" in weights else {}),
            },
        },
    }

"""The query pipeline: route once, extract parameters for THAT template, run it in the child that owns it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters.base import Adapter
from ..errors import IntentRouterError
from ..routing.normalise import normalise_question
from ..routing.router import RoutingOutcome
from .explain import alternative_json, composite_routing_json, test_routing_json
from .formatting import render_content

log = logging.getLogger("intent_router.answer")

EXECUTED, NO_MATCH, AMBIGUOUS, NEEDS_CLARIFICATION = "executed", "no_match", "ambiguous", "needs_clarification"


@dataclass
class Answer:
    """The response body plus what the routing log wants to know about it."""

    body: dict[str, Any]
    outcome: RoutingOutcome
    status: str
    row_count: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)


def _sources_by_name(adapter: Adapter) -> dict[str, Adapter]:
    return {s.name: s for s in adapter.routing_sources()}


async def test_routing(adapter: Adapter, question: str) -> tuple[dict[str, Any], RoutingOutcome]:
    """The decision with every candidate and score, and the parameters the chosen template would get
    (with the extraction trace); no query is executed."""
    original, question = question, normalise_question(question)
    router = adapter.router()
    sources = _sources_by_name(adapter)
    outcome = await router.route(question, list(sources.values()))
    body = test_routing_json(adapter, outcome, router)
    body["query"] = original
    _show_normalised(body, original, question)
    chosen = outcome.decision.selected
    if chosen is not None:
        try:
            extraction = await sources[chosen.adapter].extractor.extract(question, chosen.template)
            body["routing_decision"]["parameters"] = extraction.to_json()
        except IntentRouterError as exc:  # a values_from list whose source is down: the decision still stands
            body["routing_decision"]["parameters"] = {"error": exc.message}
    return body, outcome


def _show_normalised(target: dict[str, Any], original: str, normalised: str) -> None:
    """The question is displayed as asked; what routing saw is shown only when it differs."""
    if normalised != original:
        target["normalised_query"] = normalised


async def answer(adapter: Adapter, question: str) -> Answer:
    original, question = question, normalise_question(question)
    router = adapter.router()
    sources = _sources_by_name(adapter)
    outcome = await router.route(question, list(sources.values()))
    decision = outcome.decision
    chosen = decision.selected
    timings = dict(outcome.timings_ms)
    metadata: dict[str, Any] = {
        "source": "intent",
        "adapter": adapter.name,
        "template_id": chosen.template.id if chosen else None,
        "reason": decision.reason,
    }
    _show_normalised(metadata, original, question)
    is_composite = adapter.body_key is None
    if is_composite:
        metadata["composite_routing"] = composite_routing_json(outcome, router)
    elif chosen is not None:
        metadata["similarity_score"] = round(chosen.embedding_score, 4)
    confidence = (
        round(chosen.score, 4) if chosen else (round(outcome.candidates[0].score, 4) if outcome.candidates else 0.0)
    )

    if not decision.execute:
        status = AMBIGUOUS if chosen is not None else NO_MATCH
        metadata["status"] = status
        if chosen is not None:
            options = [alternative_json(chosen)] + [alternative_json(c) for c in decision.alternatives]
            metadata["alternatives"] = options
            content = (
                "The question matches several templates equally well: "
                + "; ".join(f"{o['description']} ({o['adapter']}/{o['template_id']})" for o in options)
                + ". Please be more specific."
            )
        else:
            metadata["best_candidates"] = [alternative_json(c) for c in decision.alternatives]
            content = "No query template matches this question closely enough."
        return Answer(
            {"content": content, "rows": [], "metadata": metadata, "confidence": confidence},
            outcome,
            status,
            timings_ms=timings,
        )

    owner = sources[chosen.adapter]
    template = chosen.template
    t = time.perf_counter()
    extraction = await owner.extractor.extract(question, template)
    timings["parameters"] = round((time.perf_counter() - t) * 1000, 3)
    metadata["parameters"] = extraction.values
    metadata["extraction"] = [step.to_json() for step in extraction.trace]
    if extraction.llm is not None:
        metadata["extraction_llm"] = extraction.llm
    if not extraction.ok:
        metadata["status"] = NEEDS_CLARIFICATION
        metadata["template_id"] = template.id
        metadata["clarification"] = [p.to_json() for p in extraction.problems]
        content = "To answer this I need: " + "; ".join(p.message for p in extraction.problems) + "."
        return Answer(
            {
                "content": content,
                "rows": [],
                "metadata": metadata,
                "confidence": confidence,
                "status": NEEDS_CLARIFICATION,
            },
            outcome,
            NEEDS_CLARIFICATION,
            timings_ms=timings,
        )

    t = time.perf_counter()
    result = await owner.run(template, extraction.values)
    timings["execute"] = round((time.perf_counter() - t) * 1000, 3)
    metadata.update(
        {
            "status": EXECUTED,
            "executed_by": owner.name,
            "row_count": len(result.rows),
            "truncated": result.truncated,
            "columns": result.columns,
            "timings_ms": timings,
        }
    )
    body = {
        "content": render_content(template, result.rows, result.truncated),
        "rows": result.rows,
        "metadata": metadata,
        "confidence": confidence,
    }
    return Answer(body, outcome, EXECUTED, row_count=len(result.rows), timings_ms=timings)

"""The query pipeline: route once, extract parameters for THAT template, run it in the child that owns it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters.base import Adapter, DataAdapter
from ..adapters.composite import CompositeAdapter
from ..api.outcome import Outcome
from ..api.responses import QueryMetadata, QueryResponse, RoutingExplanation
from ..errors import IntentRouterError
from ..routing.normalise import normalise_question
from ..routing.router import Router, RoutingOutcome
from .explain import alternative_view, composite_routing_view, routing_explanation
from .formatting import render_content

log = logging.getLogger("intent_router.answer")


@dataclass
class Answer:
    """The response plus what the routing log wants to know about it."""

    response: QueryResponse
    outcome: RoutingOutcome
    status: Outcome
    row_count: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body a client receives."""
        return self.response.dump()


@dataclass
class Explanation:
    """A test_routing response and the outcome behind it (for the routing log)."""

    response: RoutingExplanation
    outcome: RoutingOutcome
    row_count: int | None = None  # nothing runs

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body a client receives."""
        return self.response.dump()

    @property
    def timings_ms(self) -> dict[str, float]:
        return self.outcome.timings_ms

    @property
    def status(self) -> Outcome:
        decision = self.outcome.decision
        if decision.execute:
            return Outcome.ROUTED
        return Outcome.AMBIGUOUS if decision.selected is not None else Outcome.NO_MATCH


def router_for(adapter: Adapter) -> Router:
    """The router for questions asked of this adapter: its policy and its scoring stages."""
    return Router(adapter.routing_policy(), adapter.routing_stages())


async def _route(adapter: Adapter, question: str) -> tuple[Router, dict[str, DataAdapter], RoutingOutcome]:
    router = router_for(adapter)
    sources = {s.name: s for s in adapter.routing_sources()}
    return router, sources, await router.route(question, list(sources.values()))


async def explain_routing(adapter: Adapter, question: str) -> Explanation:
    """The decision with every candidate and score, and the parameters the chosen template would get
    (with the extraction trace); no query is executed."""
    original, question = question, normalise_question(question)
    router, sources, outcome = await _route(adapter, question)
    response = routing_explanation(adapter, outcome, router)
    response.query = original  # displayed as asked; what routing saw only when it differs
    if question != original:
        response.normalised_query = question
    chosen = outcome.decision.selected
    if chosen is not None:
        try:
            extraction = await sources[chosen.adapter].extractor.extract(question, chosen.template)
            response.routing_decision.parameters = extraction.to_json()
        except IntentRouterError as exc:  # a values_from list whose source is down: the decision still stands
            response.routing_decision.parameters = {"error": exc.message}
    return Explanation(response, outcome)


async def answer(adapter: Adapter, question: str) -> Answer:
    original, question = question, normalise_question(question)
    router, sources, outcome = await _route(adapter, question)
    decision = outcome.decision
    chosen = decision.selected
    timings = dict(outcome.timings_ms)
    metadata = QueryMetadata(
        source="intent",
        adapter=adapter.name,
        template_id=chosen.template.id if chosen else None,
        reason=decision.reason,
    )
    if question != original:
        metadata.normalised_query = question
    if isinstance(adapter, CompositeAdapter):
        metadata.composite_routing = composite_routing_view(outcome, router)
    elif chosen is not None:
        metadata.similarity_score = round(chosen.embedding_score, 4)
    best = chosen or (outcome.candidates[0] if outcome.candidates else None)
    confidence = round(best.score, 4) if best else 0.0

    if not decision.execute:
        status = Outcome.AMBIGUOUS if chosen is not None else Outcome.NO_MATCH
        metadata.status = status
        if chosen is not None:
            options = [alternative_view(chosen)] + [alternative_view(c) for c in decision.alternatives]
            metadata.alternatives = options
            content = (
                "The question matches several templates equally well: "
                + "; ".join(f"{o.description} ({o.adapter}/{o.template_id})" for o in options)
                + ". Please be more specific."
            )
        else:
            metadata.best_candidates = [alternative_view(c) for c in decision.alternatives]
            content = "No query template matches this question closely enough."
        response = QueryResponse(content=content, rows=[], metadata=metadata, confidence=confidence)
        return Answer(response, outcome, status, timings_ms=timings)

    assert chosen is not None  # decide() only sets execute with a selected candidate
    owner = sources[chosen.adapter]
    template = chosen.template
    t = time.perf_counter()
    extraction = await owner.extractor.extract(question, template)
    timings["parameters"] = round((time.perf_counter() - t) * 1000, 3)
    metadata.parameters = extraction.values
    metadata.extraction = [step.to_json() for step in extraction.trace]
    if extraction.llm is not None:
        metadata.extraction_llm = extraction.llm
    if not extraction.ok:
        metadata.status = Outcome.NEEDS_CLARIFICATION
        metadata.template_id = template.id
        metadata.clarification = [p.to_json() for p in extraction.problems]
        content = "To answer this I need: " + "; ".join(p.message for p in extraction.problems) + "."
        response = QueryResponse(
            content=content, rows=[], metadata=metadata, confidence=confidence, status=Outcome.NEEDS_CLARIFICATION
        )
        return Answer(response, outcome, Outcome.NEEDS_CLARIFICATION, timings_ms=timings)

    t = time.perf_counter()
    result = await owner.run(template, extraction.values)
    timings["execute"] = round((time.perf_counter() - t) * 1000, 3)
    metadata.status = Outcome.EXECUTED
    metadata.executed_by = owner.name
    metadata.row_count = len(result.rows)
    metadata.truncated = result.truncated
    metadata.columns = result.columns
    metadata.timings_ms = timings
    response = QueryResponse(
        content=render_content(template, result.rows, result.truncated),
        rows=result.rows,
        metadata=metadata,
        confidence=confidence,
    )
    return Answer(response, outcome, Outcome.EXECUTED, row_count=len(result.rows), timings_ms=timings)

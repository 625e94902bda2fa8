"""The query pipeline: route once, extract parameters for THAT template, run it in the child that owns it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..api.outcome import AnswerReason, DecisionReason, Outcome
from ..api.requests import Detail, Execution
from ..api.responses import EachValueView, QueryMetadata, QueryResponse, RoutingExplanation, SessionTurnView, Wire
from ..conversations import (
    Conversation,
    FollowUp,
    LastAnswer,
    PendingChoice,
    PendingClarification,
    SessionStore,
    SessionTurn,
    TemplateRef,
)
from ..conversations.follow_up import REASONS
from ..errors import IntentRouterError
from ..params.base import Extraction
from ..params.named_values import settle
from ..params.not_applied import note as not_applied_note
from ..routing.candidates import Candidate
from ..routing.composite import CompositeAdapter
from ..routing.normalise import normalise_question
from ..routing.routable import Routable, RoutingSource
from ..routing.router import Router, RoutingOutcome
from ..templates import Template
from . import fan_out, parameter_views
from .each_value import run_each
from .explain import alternative_view, composite_routing_view, routing_explanation
from .formatting import assumed_line, ranking_line, render_content
from .row_totals import total_rows, wants_total

log = logging.getLogger("intent_router.answer")


class _Body:
    """The JSON body a client receives, from the typed response."""

    response: Wire

    @property
    def body(self) -> dict[str, Any]:
        return self.response.dump()

    def body_text(self) -> str:
        """`body` as the JSON text sent."""
        return self.response.dump_json()


@dataclass
class Answer(_Body):
    """The response plus what the routing log wants to know about it."""

    response: QueryResponse
    outcome: RoutingOutcome
    status: Outcome
    row_count: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    pending: PendingClarification | PendingChoice | None = None  # what a session remembers of this answer
    executed: LastAnswer | None = None  # the template and values that ran (a follow-up may change one)
    turn: SessionTurn | None = None  # set when answered within a session
    sources: list[dict[str, Any]] | None = None  # fan_out: each source's template, status, rows, latency (log)

    @property
    def parameters(self) -> dict[str, Any] | None:
        """The values the template ran with, or those found before a clarification (for the log)."""
        return self.response.metadata.parameters


@dataclass
class Explanation(_Body):
    """A test_routing response and the outcome behind it (for the routing log)."""

    response: RoutingExplanation
    outcome: RoutingOutcome
    row_count: int | None = None  # nothing runs
    turn: SessionTurn | None = None  # test_routing is outside sessions
    sources: list[dict[str, Any]] | None = None  # nothing runs

    @property
    def timings_ms(self) -> dict[str, float]:
        return self.outcome.timings_ms

    @property
    def status(self) -> Outcome:
        return self.outcome.decision.outcome

    @property
    def parameters(self) -> dict[str, Any] | None:
        """The values the chosen template would run with (for the log)."""
        found = self.response.routing_decision.parameters
        values = found.get("values") if isinstance(found, dict) else None
        return values if isinstance(values, dict) else None


def router_for(adapter: Routable) -> Router:
    """The router for questions asked of this adapter: its policy and its scoring stages."""
    return Router(
        adapter.routing_policy(),
        adapter.routing_stages(),
        adapter.score_calibrations(),
        adapter.group_search(),
        adapter.routing_batches(),
    )


async def _route(adapter: Routable, question: str) -> tuple[Router, dict[str, RoutingSource], RoutingOutcome]:
    router = router_for(adapter)
    sources = {s.name: s for s in adapter.routing_sources()}
    return router, sources, await router.route(question, list(sources.values()))


async def explain_routing(
    adapter: Routable, question: str, detail: Detail = "compact", execution: Execution | None = None
) -> Explanation:
    """The decision with every candidate and score, and the parameters the chosen template would get
    (with the extraction trace); no query is executed. `detail="full"` lists every candidate's examples.
    Under fan_out (the composite's or the request's `execution`) `fan_out` names the sources that would run."""
    original, question = question, normalise_question(question)
    fanning = fan_out.applies(adapter, execution)
    router, sources, outcome = await _route(adapter, question)
    response = routing_explanation(adapter, outcome, router, detail)
    if fanning:
        assert isinstance(adapter, CompositeAdapter)  # applies() is only true for a composite
        response.fan_out = fan_out.plan(adapter, outcome).view()
    response.query = original  # displayed as asked; what routing saw only when it differs
    if question != original:
        response.normalised_query = question
    chosen = outcome.decision.selected
    if chosen is not None:
        try:
            extraction = await sources[chosen.adapter].extractor.extract(question, chosen.template)
            settle(extraction, chosen.template)  # values named as a list: what /v1/query would run
            response.routing_decision.parameters = extraction.to_json()
        except IntentRouterError as exc:  # a values_from list whose source is down: the decision still stands
            response.routing_decision.parameters = {"error": exc.message}
    return Explanation(response, outcome)


async def answer(adapter: Routable, question: str, execution: Execution | None = None) -> Answer:
    """Route the question, extract the chosen template's parameters, run it (or say what is missing);
    under fan_out, the best template of each child that clears min_score (service/fan_out.py)."""
    original, question = question, normalise_question(question)
    fanning = fan_out.applies(adapter, execution)
    router, sources, outcome = await _route(adapter, question)
    return await _respond(adapter, original, question, router, sources, outcome, fanning)


async def answer_in_session(
    adapter: Routable,
    question: str,
    sessions: SessionStore,
    session_id: str | None,
    owner: str = "",
    execution: Execution | None = None,
) -> Answer:
    """`answer` within a conversation: when the session's last answer asked for a value or a choice, this
    message may be just that (conversations/follow_up.py); otherwise it is answered as a new question.
    The response carries the session id to send with the next message."""
    fanning = fan_out.applies(adapter, execution)  # a bad request fails before the session is touched
    async with sessions.one_message_at_a_time(owner, session_id):
        return await _answer_turn(adapter, question, sessions, session_id, owner, fanning)


async def _answer_turn(
    adapter: Routable, question: str, sessions: SessionStore, session_id: str | None, owner: str, fanning: bool
) -> Answer:
    conversation = await Conversation.open(sessions, session_id, owner, adapter.name)
    original, question = question, normalise_question(question)
    router, sources, outcome = await _route(adapter, question)
    # a request to change data is never a follow-up ("delete Sales" after a list of Marketing is not "Sales")
    follow_up = (
        None
        if outcome.write_request is not None
        else await conversation.interpret(
            question,
            outcome,
            sources,
            adapter.routing_policy(),
            lambda text: router.route(text, list(sources.values())),
        )
    )
    if follow_up is None:
        result = await _respond(adapter, original, question, router, sources, outcome, fanning)
    else:
        result = await _complete(adapter, original, question, outcome, sources, follow_up)
    # a fan-out answer ran no one template: what a follow-up may continue is gone with it
    turn = await conversation.record(result.pending, follow_up, result.executed, fanned_out=result.sources is not None)
    result.turn = turn
    result.response.session_id = turn.session_id
    view = SessionTurnView(session_id=turn.session_id, turn=turn.turn)
    if turn.follow_up is not None:  # only follow-ups carry the fields (unset ones stay out of the JSON)
        view.follow_up, view.completes_turn = turn.follow_up, turn.completes_turn
        if follow_up is not None and follow_up.changed is not None:
            view.changed, view.carried = follow_up.changed, follow_up.carried
    result.response.metadata.session = view
    return result


def _metadata(
    adapter: Routable, original: str, question: str, template_id: str | None, reason: DecisionReason | AnswerReason
) -> QueryMetadata:
    metadata = QueryMetadata(source="intent", adapter=adapter.name, template_id=template_id, reason=reason)
    if question != original:
        metadata.normalised_query = question
    return metadata


async def _respond(
    adapter: Routable,
    original: str,
    question: str,
    router: Router,
    sources: dict[str, RoutingSource],
    outcome: RoutingOutcome,
    fanning: bool = False,
) -> Answer:
    decision = outcome.decision
    chosen = decision.selected
    timings = dict(outcome.timings_ms)
    metadata = _metadata(adapter, original, question, chosen.template.id if chosen else None, decision.reason)
    if isinstance(adapter, CompositeAdapter):
        metadata.composite_routing = composite_routing_view(outcome, router)
    elif chosen is not None:
        metadata.similarity_score = round(chosen.embedding_score, 4)
    best = chosen or (outcome.candidates[0] if outcome.candidates else None)
    confidence = round(best.score, 4) if best else 0.0

    if fanning:  # the one place fan-out answers branch off (fan_out.applies: only ever a composite)
        assert isinstance(adapter, CompositeAdapter)
        fanned = await fan_out.answer(adapter, question, sources, outcome, metadata, timings)
        return Answer(
            fanned.response, outcome, fanned.status, fanned.row_count, fanned.timings_ms, sources=fanned.sources
        )

    if not decision.execute:
        status = decision.outcome
        metadata.status = status
        pending: PendingChoice | None = None
        if chosen is not None:
            listed = [chosen, *decision.alternatives]
            options = [alternative_view(c) for c in listed]
            metadata.alternatives = options
            content = (
                "The question matches several templates equally well: "
                + "; ".join(f"{o.description} ({o.adapter}/{o.template_id})" for o in options)
                + ". Please be more specific."
            )
            pending = PendingChoice(question=question, options=[_ref(c) for c in listed])
        elif outcome.write_request is not None and decision.reason is DecisionReason.WRITE_REQUEST:
            content = (
                f"This asks to {outcome.write_request.verb} data, and no query template here does that: "
                "they only read, so nothing was run."
            )
        else:
            metadata.best_candidates = [alternative_view(c) for c in decision.alternatives]
            content = "No query template matches this question closely enough."
            if (ranked := ranking_line(outcome.ranking_end)) is not None:
                content = f"{content}\n{ranked}"
        metadata.timings_ms = timings
        response = QueryResponse(content=content, rows=[], metadata=metadata, confidence=confidence, status=status)
        return Answer(response, outcome, status, timings_ms=timings, pending=pending)

    assert chosen is not None  # decide() only sets execute with a selected candidate
    owner = sources[chosen.adapter]
    t = time.perf_counter()
    extraction = await owner.extractor.extract(question, chosen.template)
    timings["parameters"] = round((time.perf_counter() - t) * 1000, 3)
    answered = await _finish(owner, chosen.template, extraction, question, metadata, confidence, outcome, timings)
    if (ranked := ranking_line(outcome.ranking_end)) is not None:
        answered.response.content = f"{answered.response.content}\n{ranked}"
    return answered


def _ref(candidate: Candidate) -> TemplateRef:
    template = candidate.template
    return TemplateRef(
        adapter=candidate.adapter,
        template_id=template.id,
        description=template.description,
        score=round(candidate.score, 4),
    )


async def _complete(
    adapter: Routable,
    original: str,
    question: str,
    outcome: RoutingOutcome,
    sources: dict[str, RoutingSource],
    follow_up: FollowUp,
) -> Answer:
    """Answer a follow-up: the pending template with the values found so far (or ask again for what is missing),
    or the last answer's template with the values the message changed."""
    if follow_up.kind == "expired":
        return _expired(adapter, original, question, outcome, follow_up)
    metadata = _metadata(adapter, original, question, follow_up.template.id, AnswerReason(REASONS[follow_up.kind]))
    timings = dict(outcome.timings_ms)
    confidence = follow_up.confidence
    return await _finish(
        sources[follow_up.source.name],  # the source interpret found the follow-up's template in
        follow_up.template,
        follow_up.extraction,
        follow_up.question,  # what the turn asked: chained follow-ups keep the question they all continue
        metadata,
        confidence,
        outcome,
        timings,
        (question,),
    )


def _expired(adapter: Routable, original: str, question: str, outcome: RoutingOutcome, follow_up: FollowUp) -> Answer:
    """The question this message answers waited on a template a reload removed or renamed: say so."""
    gone = follow_up.template
    metadata = _metadata(adapter, original, question, None, AnswerReason(REASONS["expired"]))
    metadata.status = Outcome.NO_MATCH
    metadata.timings_ms = dict(outcome.timings_ms)
    content = (
        f'The question this answers ("{follow_up.question}") was waiting on the template '
        f"'{follow_up.source.name}/{gone.id}', which the configuration no longer has (it was renamed or "
        "removed). Please ask the question again."
    )
    response = QueryResponse(content=content, rows=[], metadata=metadata, confidence=0.0, status=Outcome.NO_MATCH)
    return Answer(response, outcome, Outcome.NO_MATCH, timings_ms=metadata.timings_ms)


async def _finish(
    owner: RoutingSource,
    template: Template,
    extraction: Extraction,
    question: str,
    metadata: QueryMetadata,
    confidence: float,
    outcome: RoutingOutcome,
    timings: dict[str, float],
    also_asked: tuple[str, ...] = (),
) -> Answer:
    """Run the template with these values (once per value where several were named for one: each_value.py),
    or say what is still missing (and remember it for the session). `question`: what the turn asks (for a
    follow-up, the question it continues); `also_asked`: the message itself, which may be what asks "how
    many" (row_totals.py)."""
    each = settle(extraction, template)
    metadata.parameters = extraction.values
    metadata.extraction = parameter_views.filled(extraction)
    if extraction.left_out:
        metadata.extraction_left_out = parameter_views.left_out(extraction)
    if extraction.llm is not None:
        metadata.extraction_llm = extraction.llm
    if not extraction.ok:
        metadata.status = Outcome.NEEDS_CLARIFICATION
        metadata.template_id = template.id
        metadata.clarification = parameter_views.clarification(extraction.problems)
        content = "To answer this I need: " + "; ".join(p.message for p in extraction.problems) + "."
        if (unapplied := not_applied_note(extraction.left_out)) is not None:
            content = f"{content}\n{unapplied}"
        metadata.timings_ms = timings
        response = QueryResponse(
            content=content, rows=[], metadata=metadata, confidence=confidence, status=Outcome.NEEDS_CLARIFICATION
        )
        pending = PendingClarification(
            template=TemplateRef(
                adapter=owner.name, template_id=template.id, description=template.description, score=confidence
            ),
            values={k: v for k, v in extraction.values.items() if k not in {p.name for p in extraction.problems}},
            wanted=list(dict.fromkeys(p.name for p in extraction.problems)),
            question=question,
        )
        return Answer(response, outcome, Outcome.NEEDS_CLARIFICATION, timings_ms=timings, pending=pending)

    t = time.perf_counter()
    values = dict(extraction.values)
    runs = await run_each(owner.adapter, template, values, each)
    result = runs.result
    total = None
    if each is None and wants_total([question, *also_asked], template, result):
        total = await total_rows(owner.adapter, template, values, extraction, len(result.rows))
    timings["execute"] = round((time.perf_counter() - t) * 1000, 3)
    metadata.status = Outcome.EXECUTED
    metadata.executed_by = owner.name
    metadata.row_count = len(result.rows)
    metadata.truncated = result.truncated
    if total is not None:  # set fields only: unset ones stay out of the JSON
        metadata.total_rows = total
    metadata.from_cache = result.from_cache
    metadata.columns = result.columns
    metadata.timings_ms = timings
    content = render_content(template, result.rows, result.truncated, total)
    if each is not None:
        metadata.each_value = EachValueView(parameter=each.parameter, values=each.shown())
        content = f"One answer for each {each.parameter}: {', '.join(map(str, each.values))}.\n{content}"
        if runs.without_rows:
            content += f"\nNo rows for {each.parameter} {', '.join(map(str, runs.without_rows))}."
    if (unapplied := not_applied_note(extraction.left_out)) is not None:
        content = f"{content}\n{unapplied}"
    if (assumed := assumed_line(template, values, extraction)) is not None:
        content = f"{content}\n{assumed}"
    response = QueryResponse(
        content=content,
        rows=result.rows,
        metadata=metadata,
        confidence=confidence,
        status=Outcome.EXECUTED,
    )
    ran = LastAnswer(
        template=TemplateRef(
            adapter=owner.name, template_id=template.id, description=template.description, score=confidence
        ),
        values=values,
        question=question,
    )
    return Answer(response, outcome, Outcome.EXECUTED, row_count=len(result.rows), timings_ms=timings, executed=ran)

"""A composite's concurrent questions routed as one batch (routing/batches.py): the search and every local
stage's arithmetic in one job, with the scores and decisions the step-by-step path gives."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.routing.candidates import Candidate
from server.routing.router import Router, RoutingOutcome
from server.runtime.build import Runtime
from server.testing.composite_tree import make_composite, probe_runtime

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTIONS = [
    "which customers are in the West region?",
    "quarterly revenue please",
    "how many orders do we have?",
    "who works in engineering?",
    "list employees hired last year",
    "top selling products",
    "what is the average salary by department?",
    "orders placed by customer 42",
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory) -> AsyncIterator[Runtime]:
    rt = await probe_runtime(tmp_path_factory.mktemp("routing_batches"))
    yield rt
    await rt.close()


def decided(outcome: RoutingOutcome) -> tuple:
    selected = outcome.decision.selected
    return outcome.decision.outcome, selected.template.id if selected else None, [c.key for c in outcome.candidates]


def scores(outcome: RoutingOutcome) -> list[float]:
    """Every candidate's scores, flat (products over 8 questions at once and over 1 differ in the last bits)."""
    out: list[float] = []
    for c in outcome.candidates:
        out += [c.embedding_score, c.score, *(value for _, value in sorted(c.stage_scores.items()))]
    return out


@pytest.mark.parametrize("off_loop", [True, False], ids=["one-job-on-the-search-pool", "search-in-place"])
async def test_a_batch_scores_and_decides_as_the_step_by_step_path(runtime, off_loop):
    on = make_composite(runtime, ["hr", "sales"], intent_model={"enabled": True}, string_similarity={"enabled": True})
    await on.start()
    if off_loop:
        on.group_search().off_loop_above_floats = 0  # as at 1,000 templates: every search leaves the loop
    sources = on.routing_sources()

    def router(batched: bool) -> Router:
        batches = on.routing_batches() if batched else None
        return Router(on.routing_policy(), on.routing_stages(), on.score_calibrations(), on.group_search(), batches)

    together = await asyncio.gather(*(router(True).route(q, sources) for q in QUESTIONS))
    stats = on.routing_batches().requests.stats
    assert stats.questions == len(QUESTIONS) and stats.calls < len(QUESTIONS)  # they shared batches
    # neither the search's nor a stage's own per-step batching was used
    assert on.group_search().requests.stats.calls == 0
    assert all(stage.coalescing is None for stage in on.routing_stages())

    step_by_step = [await router(False).route(q, sources) for q in QUESTIONS]
    assert on.group_search().requests.stats.calls > 0 or not off_loop
    for q, a, b in zip(QUESTIONS, together, step_by_step, strict=True):
        assert decided(a) == decided(b), q
        assert scores(a) == pytest.approx(scores(b), abs=1e-5), q
        assert {"embed", "search", "intent_model", "string_similarity", "total"} <= set(a.timings_ms), q
        assert all(c.stage_scores.keys() == {"intent_model", "string_similarity"} for c in a.candidates), q
    assert any(o.decision.selected is not None for o in together)


async def test_one_child_is_routed_step_by_step(runtime):
    """Nothing stacked to search (one child): each question takes the step-by-step path, no batch."""
    on = make_composite(runtime, ["hr"], intent_model={"enabled": True})
    await on.start()
    router = Router(
        on.routing_policy(), on.routing_stages(), on.score_calibrations(), on.group_search(), on.routing_batches()
    )
    outcomes = await asyncio.gather(*(router.route(q, on.routing_sources()) for q in QUESTIONS[:4]))
    assert on.routing_batches().requests.stats.calls == 0
    assert outcomes[3].decision.selected is not None and outcomes[3].decision.selected.adapter == "hr"


async def test_a_stage_scores_the_questions_it_fetched_for_when_one_has_no_candidates(runtime):
    """`work` gets the questions `prefetch` got, in order, a question without candidates included (the
    batch's token views are by position): the others' scores are those they get alone."""
    on = make_composite(runtime, ["hr", "sales"], intent_model={"enabled": True})
    await on.start()
    [stage] = [s for s in on.routing_stages() if s.name == "intent_model"]
    router = Router(on.routing_policy(), on.routing_stages(), on.score_calibrations(), on.group_search())
    first, last = "who works in engineering?", "quarterly revenue please"
    alone = [await router.route(q, on.routing_sources()) for q in (first, last)]

    def unscored(outcome: RoutingOutcome) -> list[Candidate]:
        return [
            dataclasses.replace(c, stage_scores={}, acceptance=None, acceptance_judgement=None)
            for c in outcome.candidates
        ]

    questions = [first, "top selling products", last]
    candidates = [unscored(alone[0]), [], unscored(alone[1])]
    reports = stage.work(questions, candidates, await stage.prefetch(questions))
    assert reports[1].error is not None and reports[0].error is None and reports[2].error is None
    for outcome, scored in zip(alone, (candidates[0], candidates[2]), strict=True):
        expected = [c.stage_scores["intent_model"] for c in outcome.candidates]
        assert [c.stage_scores["intent_model"] for c in scored] == pytest.approx(expected, abs=1e-5)

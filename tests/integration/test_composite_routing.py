"""Composite behaviour with real children (SQLite, DuckDB, and a probe SQL type of the tests' own):
every composite key changes what happens; slow and failing children are skipped and named;
sequential search follows config order; ties go to the first child in config order."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.runtime.build import Runtime
from server.service import answer as answering
from server.testing.composite_tree import (
    ProbeSQLAdapter,
    make_composite,
    probe_runtime,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

PEOPLE_Q = "who works in the Engineering department?"
STOCK_Q = "how much stock is left in the warehouse"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory) -> AsyncIterator[Runtime]:
    rt = await probe_runtime(tmp_path_factory.mktemp("composite"))
    yield rt
    await rt.close()


def routing(body: dict) -> dict:
    return body["metadata"]["composite_routing"]


# ---- child_adapters, confidence_threshold, max_templates_per_source ------------------------------


async def test_child_adapters_decide_where_a_question_can_go(runtime):
    both = await answering.answer(make_composite(runtime, ["hr", "sales"]), PEOPLE_Q)
    assert routing(both.body)["selected_adapter"] == "hr"
    assert both.body["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
    only_sales = (
        await answering.explain_routing(make_composite(runtime, ["sales"], confidence_threshold=0.0), PEOPLE_Q)
    ).body
    assert only_sales["configuration"]["adapters_searched"] == ["sales"]
    assert {m["source_adapter"] for m in only_sales["all_matches"]} == {"sales"}


async def test_confidence_threshold_decides_between_executing_and_abstaining(runtime):
    low = await answering.answer(make_composite(runtime, ["hr", "sales"], confidence_threshold=0.3), PEOPLE_Q)
    assert low.status == "executed" and low.body["rows"]
    score = low.body["confidence"]
    high = await answering.answer(make_composite(runtime, ["hr", "sales"], confidence_threshold=score + 0.01), PEOPLE_Q)
    assert high.status == "no_match" and high.body["rows"] == []
    meta = high.body["metadata"]
    assert meta["reason"] == routing(high.body)["reason"] == "no_matches_above_threshold"
    assert meta["template_id"] is None and "executed_by" not in meta
    assert meta["best_candidates"][0] == {
        "adapter": "hr",
        "template_id": "people_in_department",
        "description": "List the people who work in a department",
        "score": pytest.approx(score, abs=1e-4),
    }


async def test_max_templates_per_source_bounds_candidates_per_child(runtime):
    for k, expected in ((1, 2), (2, 4), (3, 6)):
        body = (
            await answering.explain_routing(
                make_composite(runtime, ["hr", "sales"], max_templates_per_source=k), PEOPLE_Q
            )
        ).body
        assert body["total_matches"] == len(body["all_matches"]) == expected
        assert sum(m["source_adapter"] == "hr" for m in body["all_matches"]) == expected // 2


# ---- failures and timeouts ------------------------------------------------------------------------


async def test_slow_and_failing_children_are_skipped_and_named(runtime):
    composite = make_composite(runtime, ["slow", "broken", "hr", "sales"], search_timeout=0.2)
    result = await answering.answer(composite, PEOPLE_Q)
    meta = routing(result.body)
    assert result.status == "executed" and meta["selected_adapter"] == "hr"
    assert result.body["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
    assert meta["adapters_searched"] == ["slow", "broken", "hr", "sales"]
    assert meta["adapters_failed"] == [
        {"adapter": "slow", "reason": "search timed out after 0.2 s"},
        {"adapter": "broken", "reason": "search failed: ConnectionError"},
    ]
    assert "10.0.0.5" not in str(result.body) and "secret-dsn" not in str(result.body)
    assert result.timings_ms["search"] < 380  # did not wait for the 0.4 s child


async def test_search_timeout_decides_whether_a_slow_child_counts(runtime):
    short = await answering.answer(make_composite(runtime, ["slow", "hr", "sales"], search_timeout=0.2), STOCK_Q)
    assert routing(short.body)["selected_adapter"] != "slow"
    assert routing(short.body)["adapters_failed"] == [{"adapter": "slow", "reason": "search timed out after 0.2 s"}]
    long = await answering.answer(make_composite(runtime, ["slow", "hr", "sales"], search_timeout=2.0), STOCK_Q)
    assert routing(long.body)["adapters_failed"] == []
    assert (routing(long.body)["selected_adapter"], long.body["metadata"]["template_id"]) == ("slow", "stock_levels")
    assert long.body["rows"] == [{"item": "bolts", "qty": 500}, {"item": "nuts", "qty": 20}]


async def test_failures_are_reported_by_test_routing_too(runtime):
    body = (await answering.explain_routing(make_composite(runtime, ["broken", "hr"]), PEOPLE_Q)).body
    assert body["adapters_failed"] == [{"adapter": "broken", "reason": "search failed: ConnectionError"}]
    assert body["routing_decision"]["would_route_to"] == "hr"


# ---- parallel_search ------------------------------------------------------------------------------


def searches_of(names: set[str]) -> list[tuple[str, float, float]]:
    return [c for c in ProbeSQLAdapter.calls if c[0] in names]


async def test_sequential_search_follows_config_order(runtime):
    ProbeSQLAdapter.calls.clear()
    result = await answering.answer(
        make_composite(runtime, ["probe_c", "probe_a", "probe_b"], parallel_search=False), STOCK_Q
    )
    calls = searches_of({"probe_a", "probe_b", "probe_c"})
    assert [c[0] for c in calls] == ["probe_c", "probe_a", "probe_b"]
    for before, after in itertools.pairwise(calls):
        assert after[1] >= before[2]  # each search starts after the previous one ended
    assert result.timings_ms["search"] >= 3 * 150 * 0.95


async def test_parallel_search_overlaps_children(runtime):
    ProbeSQLAdapter.calls.clear()
    result = await answering.answer(
        make_composite(runtime, ["probe_c", "probe_a", "probe_b"], parallel_search=True), STOCK_Q
    )
    calls = searches_of({"probe_a", "probe_b", "probe_c"})
    assert len(calls) == 3
    assert max(c[1] for c in calls) < min(c[2] for c in calls)  # all started before any finished
    assert result.timings_ms["search"] < 2 * 150


# ---- ties ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parallel", [True, False])
async def test_ties_go_to_the_first_child_in_config_order(runtime, parallel):
    for order in (["hr", "hr_twin"], ["hr_twin", "hr"]):
        result = await answering.answer(make_composite(runtime, order, parallel_search=parallel), PEOPLE_Q)
        top = result.outcome.candidates[:2]
        assert top[0].score == top[1].score and top[0].template.id == top[1].template.id  # a true tie
        assert routing(result.body)["selected_adapter"] == order[0]
        assert result.body["metadata"]["executed_by"] == order[0]


# ---- ambiguity_margin / on_ambiguity -----------------------------------------------------------


async def test_ambiguity_ask_executes_nothing_and_lists_alternatives(runtime):
    result = await answering.answer(make_composite(runtime, ["hr", "hr_twin"], ambiguity_margin=0.02), PEOPLE_Q)
    assert result.status == "ambiguous" and result.body["rows"] == []
    meta = result.body["metadata"]
    assert meta["reason"] == "ambiguous" and "executed_by" not in meta
    assert [(a["adapter"], a["template_id"]) for a in meta["alternatives"]] == [
        ("hr", "people_in_department"),
        ("hr_twin", "people_in_department"),
    ]
    assert "Please be more specific" in result.body["content"]


async def test_ambiguity_best_executes_the_best_and_still_reports(runtime):
    result = await answering.answer(
        make_composite(runtime, ["hr", "hr_twin"], ambiguity_margin=0.02, on_ambiguity="best"), PEOPLE_Q
    )
    assert result.status == "executed" and result.body["metadata"]["executed_by"] == "hr"
    meta = routing(result.body)
    assert meta["reason"] == "ambiguous"
    assert meta["alternatives"][0]["adapter"] == "hr_twin"


async def test_without_margin_the_same_tie_routes(runtime):
    result = await answering.answer(make_composite(runtime, ["hr", "hr_twin"]), PEOPLE_Q)
    assert result.status == "executed" and routing(result.body)["reason"] == "highest_combined_score_above_threshold"


# ---- verbose ---------------------------------------------------------------------------------------


async def test_verbose_logs_the_design_lines(runtime, caplog):
    caplog.set_level(logging.INFO, logger="intent_router.routing")
    await answering.answer(make_composite(runtime, ["hr", "sales"], verbose=False), PEOPLE_Q)
    assert not [r for r in caplog.messages if r.startswith("[Composite]")]
    result = await answering.answer(make_composite(runtime, ["hr", "sales"], verbose=True), PEOPLE_Q)
    lines = [m for m in caplog.messages if m.startswith("[Composite]")]
    chosen = result.outcome.decision.selected
    assert lines == [
        f"[Composite] Processing query: '{PEOPLE_Q}'",
        "[Composite] Searching across 2 adapters: ['hr', 'sales']",
        "[Composite] Routed to: hr",
        "[Composite] Template: people_in_department",
        "[Composite] Total matches: 6",
        f"[Composite] Combined Score: {chosen.score:.3f}",
        f"[Composite]   - Embedding: {chosen.embedding_score:.3f}",
        f"[Composite]   - String Similarity: {chosen.stage_scores['string_similarity']:.3f}",
    ]
    caplog.clear()
    await answering.answer(
        make_composite(runtime, ["hr"], verbose=True, string_similarity={"enabled": False}), PEOPLE_Q
    )
    lines = [m for m in caplog.messages if m.startswith("[Composite]")]
    assert lines[2:4] == ["[Composite] Routed to: hr", "[Composite] Template: people_in_department"]
    assert not any("Combined Score" in line or "String Similarity" in line for line in lines)
    assert lines[-1].startswith("[Composite] Score: ")


# ---- string_similarity and scoring through the composite ------------------------------------------


async def selected(runtime, question: str = PEOPLE_Q, **keys):
    result = await answering.answer(make_composite(runtime, ["hr", "sales"], **keys), question)
    return result, routing(result.body)


async def test_string_similarity_enabled_adds_the_stage(runtime):
    _, on = await selected(runtime)
    _, off = await selected(runtime, string_similarity={"enabled": False})
    assert on["multistage_scoring"]["string_similarity_score"] is not None
    assert on["multistage_scoring"]["scoring_details"] == {
        "embedding_weight": 0.4,
        "rerank_weight": 0.0,
        "string_similarity_weight": 0.2,
    }
    assert "multistage_scoring" not in off and off["reason"] == "highest_score_above_threshold"
    assert on["reason"] == "highest_combined_score_above_threshold"


@pytest.mark.parametrize(
    "override",
    [
        {"algorithm": "levenshtein"},
        {"algorithm": "ratio"},
        {"compare_fields": ["description"]},
        {"aggregation": "avg"},
        {"aggregation": "weighted_avg"},
        {"aggregation": "weighted_avg", "field_weights": {"description": 5.0, "nl_examples": 1.0}},
    ],
)
async def test_each_string_similarity_setting_changes_the_score(runtime, override):
    _, base = await selected(
        runtime, string_similarity={"aggregation": "weighted_avg"} if "field_weights" in override else {}
    )
    _, changed = await selected(runtime, string_similarity=override)
    assert (
        changed["multistage_scoring"]["string_similarity_score"]
        != base["multistage_scoring"]["string_similarity_score"]
    )
    assert changed["multistage_scoring"]["combined_score"] != base["multistage_scoring"]["combined_score"]


async def test_min_threshold_and_weights_change_the_combined_score(runtime):
    _, base = await selected(runtime)
    ss = base["multistage_scoring"]["string_similarity_score"]
    _, cut = await selected(runtime, string_similarity={"min_threshold": min(1.0, ss + 0.01)})
    assert cut["multistage_scoring"]["string_similarity_score"] == 0.0
    _, heavy = await selected(runtime, string_similarity={"weight": 0.8})
    assert heavy["multistage_scoring"]["scoring_details"]["string_similarity_weight"] == 0.8
    emb = base["multistage_scoring"]["embedding_score"]
    assert heavy["multistage_scoring"]["combined_score"] == pytest.approx((0.4 * emb + 0.8 * ss) / 1.2, abs=2e-4)
    _, emb_heavy = await selected(runtime, scoring={"embedding_weight": 2.0})
    assert emb_heavy["multistage_scoring"]["combined_score"] == pytest.approx((2.0 * emb + 0.2 * ss) / 2.2, abs=2e-4)


async def test_tie_breaker_reaches_the_composites_ranking(runtime):
    """Equal combined scores are ordered by the configured stage; hr and hr_twin tie on every stage,
    so config order decides there; here two different templates are forced to a combined tie by a
    zero weight on the stage that differs."""
    composite = make_composite(
        runtime,
        ["hr", "sales"],
        scoring={"embedding_weight": 0.0, "tie_breaker": "embedding"},
        string_similarity={"min_threshold": 1.0},
    )  # every string score 0: all tie at 0
    body = (await answering.explain_routing(composite, PEOPLE_Q)).body
    embs = [m["embedding_score"] for m in body["all_matches"]]
    assert len({m["combined_score"] for m in body["all_matches"]}) == 1
    assert embs == sorted(embs, reverse=True)
    composite = make_composite(
        runtime,
        ["hr", "sales"],
        scoring={"embedding_weight": 0.0, "tie_breaker": "string_similarity"},
        string_similarity={"min_threshold": 1.0},
    )
    body2 = (await answering.explain_routing(composite, PEOPLE_Q)).body
    # all string scores are equal too, so the order falls back to config order (hr before sales)
    adapters = [m["source_adapter"] for m in body2["all_matches"]]
    assert adapters == sorted(adapters, key=["hr", "sales"].index)

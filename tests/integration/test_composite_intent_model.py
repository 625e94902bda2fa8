"""The intent_model stage: fitted at start over all children, its keys change behaviour, fits are reused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from server.runtime.build import Runtime
from server.service import answer as answering
from server.testing.composite_tree import make_composite, probe_runtime

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHILDREN = ["hr", "sales"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(tmp_path_factory) -> AsyncIterator[Runtime]:
    rt = await probe_runtime(tmp_path_factory.mktemp("intent_model"))
    yield rt
    await rt.close()


async def composite(runtime: Runtime, **keys):
    c = make_composite(runtime, CHILDREN, **keys)
    await c.start()
    return c


async def test_disabled_by_default_and_enabled_adds_a_score(runtime):
    off = await composite(runtime)
    body = (await answering.explain_routing(off, "which customers are in the West region?")).body
    assert all("intent_model_score" not in m for m in body["all_matches"])
    assert body["configuration"]["intent_model_enabled"] is False

    on = await composite(runtime, intent_model={"enabled": True})
    body = (await answering.explain_routing(on, "which customers are in the West region?")).body
    assert body["configuration"]["intent_model_enabled"] is True
    assert body["routing_decision"]["selected_template"] == "customers_by_region"
    scores = {m["template_id"]: m["intent_model_score"] for m in body["all_matches"]}
    assert min(scores.values()) >= 0.0 and max(scores.values()) <= 1.0
    assert scores["customers_by_region"] == max(scores.values())
    assert body["all_matches"][0]["scoring_details"]["intent_model_weight"] == 1.0


async def test_weight_changes_the_combined_score(runtime):
    q = "quarterly revenue please"
    light = await composite(
        runtime, intent_model={"enabled": True, "weight": 0.1}, string_similarity={"enabled": False}
    )
    heavy = await composite(
        runtime, intent_model={"enabled": True, "weight": 5.0}, string_similarity={"enabled": False}
    )
    a = (await answering.explain_routing(light, q)).body
    b = (await answering.explain_routing(heavy, q)).body
    top_a, top_b = a["all_matches"][0], b["all_matches"][0]
    assert top_a["template_id"] == top_b["template_id"] == "revenue_by_quarter"
    for top, w in ((top_a, 0.1), (top_b, 5.0)):
        expected = (0.4 * top["embedding_score"] + w * top["intent_model_score"]) / (0.4 + w)
        assert top["combined_score"] == pytest.approx(expected, abs=2e-4)


async def test_max_templates_turns_the_model_off_and_says_why(runtime):
    capped = await composite(runtime, intent_model={"enabled": True, "max_templates": 2})
    body = (await answering.explain_routing(capped, "how many orders do we have?")).body
    assert [e["stage"] for e in body["stage_errors"]] == ["intent_model"]
    assert "exceed intent_model.max_templates (2)" in body["stage_errors"][0]["error"]
    assert all("intent_model_score" not in m for m in body["all_matches"])
    assert body["routing_decision"]["selected_template"] == "order_count"  # the other stages still route


async def test_a_second_composite_over_the_same_children_reuses_the_fit(runtime):
    first = await composite(runtime, intent_model={"enabled": True})
    second = await composite(runtime, intent_model={"enabled": True}, confidence_threshold=0.9)
    [stage_a] = [s for s in first.routing_stages() if s.name == "intent_model"]
    [stage_b] = [s for s in second.routing_stages() if s.name == "intent_model"]
    assert stage_a.model is stage_b.model


async def test_executes_the_template_the_model_helped_choose(runtime):
    c = await composite(runtime, intent_model={"enabled": True})
    result = await answering.answer(c, "list the customers from the North region")
    meta = result.body["metadata"]
    assert meta["template_id"] == meta["composite_routing"]["template_id"] == "customers_by_region"
    assert result.body["rows"] == [{"name": "Acme"}, {"name": "Initech"}]
    assert meta["composite_routing"]["multistage_scoring"]["intent_model_score"] > 0


async def test_token_views_are_used_with_the_local_encoder_and_can_be_turned_off(runtime):
    with_views = await composite(runtime, intent_model={"enabled": True})
    without = await composite(runtime, intent_model={"enabled": True, "token_views": False})
    [stage_on] = [s for s in with_views.routing_stages() if s.name == "intent_model"]
    [stage_off] = [s for s in without.routing_stages() if s.name == "intent_model"]
    assert stage_on.model.views is not None and stage_off.model.views is None
    assert with_views.describe()["multistage_selection"]["intent_model"]["token_views"] is True
    assert without.describe()["multistage_selection"]["intent_model"]["token_views"] is False
    q = "show me the customers located in the west"
    a = (await answering.explain_routing(with_views, q)).body
    b = (await answering.explain_routing(without, q)).body
    assert a["routing_decision"]["selected_template"] == b["routing_decision"]["selected_template"]
    scores_a = {m["template_id"]: m["intent_model_score"] for m in a["all_matches"]}
    scores_b = {m["template_id"]: m["intent_model_score"] for m in b["all_matches"]}
    assert scores_a.keys() == scores_b.keys()
    assert any(abs(scores_a[t] - scores_b[t]) > 1e-4 for t in scores_a)


async def test_a_repeated_question_the_encoder_forgot_costs_no_forward_pass(runtime):
    """Past the encoder's memory of recent questions, a question asked again is an embedding-cache hit,
    and its token views come from the model's pooled-views cache: the same scores, no forward pass."""
    on = await composite(runtime, intent_model={"enabled": True})
    [stage] = [s for s in on.routing_stages() if s.name == "intent_model"]
    assert stage.model.views is not None
    encoder = stage.embedder.inner.model  # the local encoder behind the embedding cache
    q = "which customers placed orders in the west? (asked again)"
    first = (await answering.explain_routing(on, q)).body
    encoder._recent_views.clear()  # as after 256 other questions
    runs: list[list[str]] = []
    original = encoder._run
    encoder._run = lambda *a, **kw: runs.append(a[0]) or original(*a, **kw)
    try:
        again = (await answering.explain_routing(on, q)).body
    finally:
        encoder._run = original
    assert runs == []
    assert again["all_matches"] == first["all_matches"]
    assert again["routing_decision"] == first["routing_decision"]

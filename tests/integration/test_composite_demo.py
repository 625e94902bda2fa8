"""The demo composite (config/: hr in SQLite + sales in DuckDB, `company` over both) on seeded data:
route once over every labelled demo question, no re-embedding in the child, and the debug surfaces
(POST /v1/test_routing, `run.py route`, GET /v1/routing/statistics) in the design's shapes."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from server.embedding.cache import CachedEmbedder
from server.runtime.build import Runtime
from server.service import answer as answering
from server.testing.app import running_app

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = yaml.safe_load((REPO / "tests" / "data" / "demo_questions.yaml").read_text())["questions"]
IN_SCOPE = [q for q in QUESTIONS if q["adapter"]]
OUT_OF_SCOPE = [q for q in QUESTIONS if not q["adapter"]]


def texts_embedded(runtime: Runtime) -> int:
    """Texts asked of every child's embedder so far (cache hits included)."""
    embedders = {id(e): e for e in (runtime.get(name).embedder for name in ("hr", "sales"))}  # may be shared
    total = 0
    for embedder in embedders.values():
        assert isinstance(embedder, CachedEmbedder)
        total += embedder.stats.hits + embedder.stats.misses
    return total


async def test_route_once_over_every_demo_question(demo_runtime):
    company = demo_runtime.get("company")
    statuses: dict[str, int] = {}
    right_adapter = 0
    for q in QUESTIONS:
        before = texts_embedded(demo_runtime)
        result = await answering.answer(company, q["question"])
        assert texts_embedded(demo_runtime) == before + 1, q  # one embedding for routing; the child embeds nothing
        meta = result.body["metadata"]
        routing = meta["composite_routing"]
        statuses[result.status] = statuses.get(result.status, 0) + 1
        if result.status in ("executed", "needs_clarification"):
            assert meta["template_id"] == routing["template_id"] is not None, q
            assert routing["template_id"] == result.outcome.decision.selected.template.id
        if result.status == "executed":
            assert meta["executed_by"] == routing["selected_adapter"], q
            assert meta["template_id"] in demo_runtime.get(meta["executed_by"]).templates
            assert meta["row_count"] == len(result.body["rows"])
        else:
            assert result.body["rows"] == [] and "executed_by" not in meta
        if q["adapter"] and routing["selected_adapter"] == q["adapter"]:
            right_adapter += 1
        assert routing["adapters_searched"] == ["hr", "sales"] and routing["adapters_failed"] == []
    assert statuses.get("executed", 0) >= len(IN_SCOPE) * 0.8, statuses
    assert right_adapter >= len(IN_SCOPE) * 0.9, right_adapter


async def test_out_of_scope_questions_abstain_below_the_threshold(demo_runtime):
    """Abstention follows the combined score and the composite's threshold (0.159 in the demo config, as
    fit-thresholds wrote it)."""
    company = demo_runtime.get("company")
    threshold = company.settings.confidence_threshold
    abstained = 0
    for q in OUT_OF_SCOPE:
        result = await answering.answer(company, q["question"])
        best = result.outcome.candidates[0].score
        assert (result.status == "no_match") == (best < threshold), (q, best)
        if result.status == "no_match":
            abstained += 1
            meta = result.body["metadata"]
            assert meta["reason"] == "no_matches_above_threshold" and meta["template_id"] is None
            assert meta["composite_routing"]["selected_adapter"] is None
            assert [c["score"] for c in meta["best_candidates"]] == [
                round(c.score, 4) for c in result.outcome.candidates[:3]
            ]
            assert result.body["rows"] == [] and result.body["confidence"] == round(best, 4)
    assert abstained >= 5, abstained  # measured: 6 of 12 with string similarity on (jaro_winkler)


async def test_test_routing_embeds_once_and_runs_nothing(demo_runtime):
    before = texts_embedded(demo_runtime)
    body, outcome = (
        (_r := (await answering.explain_routing(demo_runtime.get("company"), "count the engineers we employ"))).body,
        _r.outcome,
    )
    assert texts_embedded(demo_runtime) == before + 1
    assert "rows" not in body and outcome.decision.selected.adapter == "hr"


# ---- HTTP and CLI -------------------------------------------------------------------------------------

TEST_ROUTING_KEYS = {
    "query",
    "total_matches",
    "matches_above_threshold",
    "all_matches",
    "routing_decision",
    "configuration",
}
MATCH_KEYS = {
    "template_id",
    "source_adapter",
    "embedding_score",
    "combined_score",
    "rerank_score",
    "string_similarity_score",
    "description",
    "nl_examples",
    "above_threshold",
    "scoring_details",
}
DECISION_KEYS = {
    "would_route_to",
    "selected_template",
    "selection_score",
    "embedding_score",
    "rerank_score",
    "string_similarity_score",
    "reason",
}
CONFIG_KEYS = {
    "confidence_threshold",
    "adapters_searched",
    "multistage_enabled",
    "reranking_enabled",
    "string_similarity_enabled",
    "scoring_weights",
}


def assert_test_routing_shape(body: dict, question: str) -> None:
    assert set(body) >= TEST_ROUTING_KEYS and body["query"] == question
    assert body["all_matches"] and all(set(m) >= MATCH_KEYS for m in body["all_matches"])
    assert set(body["routing_decision"]) >= DECISION_KEYS
    assert set(body["configuration"]) >= CONFIG_KEYS
    assert body["configuration"]["adapters_searched"] == ["hr", "sales"]
    # the demo composite: embedding + intent model, string similarity off (config/adapters/demo.yaml)
    assert body["configuration"]["scoring_weights"] == {
        "embedding": 0.4,
        "reranking": 0.0,
        "string_similarity": 0.0,
        "intent_model": 1.0,
    }
    assert body["configuration"]["reranking_enabled"] is False
    assert body["total_matches"] == len(body["all_matches"]) == 6  # 2 children x max_templates_per_source 3
    scores = [m["combined_score"] for m in body["all_matches"]]
    assert scores == sorted(scores, reverse=True)
    assert "rows" not in body


async def test_http_test_routing_statistics_and_no_execution(demo_config_dir, tmp_path):
    demo = tmp_path / "demo"
    shutil.copytree(demo_config_dir.parent, demo)  # this test deletes a database
    question = "total salary cost for the HR team"
    async with running_app(demo / "config") as (client, _):
        resp = await client.post("/v1/test_routing", json={"query": question, "adapter": "company"})
        assert resp.status == 200
        body = await resp.json()
        assert_test_routing_shape(body, question)
        decision = body["routing_decision"]
        assert (decision["would_route_to"], decision["selected_template"]) == ("hr", "department_salary_summary")
        assert decision["reason"] == "highest_combined_score_above_threshold"
        assert decision["rerank_score"] is None and decision["string_similarity_score"] is None
        assert body["all_matches"][0]["intent_model_score"] is not None

        # concurrent questions: routed in shared batches (the stacked search and the stages together), counted in
        # /metrics
        others = ["who works in Engineering?", "top products by revenue", "orders last month", "average salary"]
        replies = await asyncio.gather(
            *(client.post("/v1/test_routing", json={"query": q, "adapter": "company"}) for q in others)
        )
        assert [r.status for r in replies] == [200] * len(others)
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(await (await client.get("/metrics")).text())
            for s in family.samples
        }
        labels = (("adapter", "company"), ("stage", "routing"))
        assert samples[("intent_router_stage_questions_total", labels)] == 1 + len(others)
        assert 1 <= samples[("intent_router_stage_question_batches_total", labels)] <= 1 + len(others)
        assert 1 <= samples[("intent_router_stage_largest_question_batch", labels)] <= len(others)

        resp = await client.get("/v1/routing/statistics", params={"adapter": "company"})
        assert resp.status == 200
        stats = await resp.json()
        assert stats["child_adapter_count"] == 2
        assert set(stats["child_adapters"]) == {"hr", "sales"}
        for name in ("hr", "sales"):
            child = stats["child_adapters"][name]
            assert child["total_templates"] == 29  # templates, not their ~6 example vectors each
            assert isinstance(child["collection_name"], str) and child["collection_name"]
        for key, value in {
            "confidence_threshold": 0.159,
            "max_templates_per_source": 3,
            "parallel_search": True,
            "search_timeout": 5.0,
        }.items():
            assert stats["configuration"][key] == value
        multistage = stats["multistage_selection"]
        assert multistage["enabled"] is True
        assert multistage["reranking"] == {
            "enabled": False,
            "provider": "anthropic",
            "top_candidates": 10,
            "weight": 0.4,
        }
        assert multistage["string_similarity"] == {
            "enabled": False,
            "algorithm": "jaro_winkler",
            "weight": 0.2,
            "compare_fields": ["description", "nl_examples"],
        }
        intent = dict(multistage["intent_model"])
        assert intent.pop("source") in ("fitted", "disk") and intent.pop("ready_seconds") >= 0
        assert intent.pop("last_fit")["kind"] in ("full", "loaded")  # fitted now, or loaded from disk
        assert intent == {
            "enabled": True,
            "weight": 1.0,
            "fitted": True,
            "token_views": True,
            "fitting": False,
            "generation": 1,
        }
        assert multistage["scoring"] == {"embedding_weight": 0.4, "normalize_scores": True, "tie_breaker": "embedding"}

        # test_routing never touches the data source: it still answers with the database gone
        (demo / "templates" / "hr" / "hr.db").unlink()
        resp = await client.post("/v1/test_routing", json={"query": question, "adapter": "company"})
        assert resp.status == 200 and (await resp.json())["routing_decision"]["would_route_to"] == "hr"
        resp = await client.post("/v1/query", json={"query": question, "adapter": "company"})
        assert resp.status == 503  # while a query does execute, in hr


async def test_cli_route_prints_test_routing_json(demo_config_dir):
    question = "list pending orders"
    argv = [
        sys.executable,
        str(REPO / "run.py"),
        "--config",
        str(demo_config_dir),
        "--log-level",
        "WARNING",
        "route",
        question,
    ]
    proc = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert_test_routing_shape(body, question)
    assert body["routing_decision"]["would_route_to"] == "sales"
    assert body["routing_decision"]["selected_template"] == "orders_by_status"

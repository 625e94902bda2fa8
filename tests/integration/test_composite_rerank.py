"""Reranking inside the composite, through the real anthropic, cohere and openai SDKs and the
self-hosted /rerank API (real aiohttp HTTP) against loopback stand-ins: one batched call, scores
in the design's JSON, failures fall back and are reported, the (question, adapter, template)
cache with TTL and size bound, and parallel_rerank."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio

from server.routing.candidates import Candidate
from server.routing.router import Router
from server.routing.stages.base import ScoringStage, StageReport
from server.routing.stages.rerank import rerank_text
from server.runtime.build import Runtime, build_runtime
from server.runtime.loader import load_config
from server.service import answer as answering
from server.testing.anthropic_standin import RAW_TEXT_MARKER, AnthropicStandin, Reply, parse_prompt, word_overlap
from server.testing.cohere_standin import CohereReply, CohereStandin
from server.testing.composite_tree import build_tree, make_composite, sql_child
from server.testing.configs import BASE_CONFIG
from server.testing.openai_standin import OpenAIReply, OpenAIStandin
from server.testing.rerank_api_standin import RerankApiReply, RerankApiStandin

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "composite-test-key"
ENV = {"COMPOSITE_TEST_ANTHROPIC_KEY": KEY, "COMPOSITE_TEST_COHERE_KEY": KEY, "COMPOSITE_TEST_OPENAI_KEY": KEY}
Q = "who works in the Engineering department?"
ADAPTERS = (
    "adapters:\n"
    + sql_child("hr", "people.db", "people")
    + sql_child("hr_twin", "people.db", "people")
    + (
        "  - name: sales\n    type: duckdb\n    connection: {path: templates/sales.duckdb}\n"
        '    templates: ["templates/sales/*.yaml"]\n'
    )
)


class Apis:
    def __init__(
        self, anthropic: AnthropicStandin, cohere: CohereStandin, openai: OpenAIStandin, local: RerankApiStandin
    ) -> None:
        self.anthropic, self.cohere, self.openai, self.local = anthropic, cohere, openai, local


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def apis() -> AsyncIterator[Apis]:
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    async with (
        AnthropicStandin(api_key=KEY) as anthropic,
        CohereStandin(api_key=KEY) as cohere,
        OpenAIStandin(api_key=KEY) as openai,
        RerankApiStandin() as local,
    ):
        yield Apis(anthropic, cohere, openai, local)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runtime(apis, tmp_path_factory) -> AsyncIterator[Runtime]:
    config = (
        BASE_CONFIG
        + f"""
rerankers:
  claude: {{provider: anthropic, model: claude-haiku-4-5, api_key_env: COMPOSITE_TEST_ANTHROPIC_KEY,
           base_url: "{apis.anthropic.base_url}", timeout: 2.0}}
  cohere: {{provider: cohere, model: rerank-v3.5, api_key_env: COMPOSITE_TEST_COHERE_KEY,
           base_url: "{apis.cohere.base_url}", timeout: 2.0}}
  gpt: {{provider: openai, model: gpt-4.1-mini, api_key_env: COMPOSITE_TEST_OPENAI_KEY,
        base_url: "{apis.openai.api_url}", timeout: 2.0}}
  local: {{provider: rerank_api, api_format: tei, base_url: "{apis.local.base_url}", timeout: 2.0}}
"""
    )
    rt = await build_runtime(load_config(build_tree(tmp_path_factory.mktemp("rerank"), config, ADAPTERS)))
    yield rt
    await rt.close()


def reranking(provider: str = "claude", **kw: object) -> dict:
    return {"reranking": {"enabled": True, "provider": provider, **kw}}


async def ask(runtime: Runtime, question: str = Q, children: Sequence[str] = ("hr", "sales"), **keys: object):
    composite = make_composite(runtime, list(children), **keys)
    result = await answering.answer(composite, question)
    await composite.close()
    return result, result.body["metadata"]["composite_routing"]


# ---- Anthropic: one batched call, structured scores, the design's JSON -----------------------------


async def test_anthropic_scores_all_candidates_in_one_call(runtime, apis):
    before = len(apis.anthropic.requests)
    result, meta = await ask(runtime, **reranking())
    new = apis.anthropic.requests[before:]
    assert len(new) == 1
    body = new[0].body
    assert [t["name"] for t in body["tools"]] == [body["tool_choice"]["name"]]  # a forced scoring tool
    question, texts = parse_prompt(body)
    cands = result.outcome.candidates
    assert question == Q and len(texts) == len(cands) == 6
    assert sorted(texts) == sorted(rerank_text(c) for c in cands)
    expected = dict(zip(texts, word_overlap(Q, texts), strict=True))
    for c in cands:
        assert c.stage_score("rerank") == pytest.approx(expected[rerank_text(c)], abs=1e-4)
    ms = meta["multistage_scoring"]
    assert set(ms) == {
        "enabled",
        "combined_score",
        "embedding_score",
        "rerank_score",
        "string_similarity_score",
        "stage_scores",
        "scoring_details",
    }
    assert ms["stage_scores"] == {
        "embedding": ms["embedding_score"],
        "string_similarity": ms["string_similarity_score"],
        "rerank": ms["rerank_score"],
    }
    assert ms["enabled"] is True
    assert ms["scoring_details"] == {"embedding_weight": 0.4, "rerank_weight": 0.4, "string_similarity_weight": 0.2}
    assert ms["combined_score"] == pytest.approx(
        0.4 * ms["embedding_score"] + 0.4 * ms["rerank_score"] + 0.2 * ms["string_similarity_score"], abs=3e-4
    )
    assert result.body["confidence"] == pytest.approx(ms["combined_score"], abs=1e-4)
    assert meta["selected_adapter"] == "hr" and result.body["metadata"]["template_id"] == meta["template_id"]
    assert "stage_errors" not in meta


async def test_test_routing_has_the_design_fields(runtime, apis):
    composite = make_composite(runtime, ["hr", "sales"], **reranking())
    body = (await answering.explain_routing(composite, Q)).body
    await composite.close()
    assert {
        "query",
        "total_matches",
        "matches_above_threshold",
        "all_matches",
        "routing_decision",
        "configuration",
    } <= set(body)
    match = body["all_matches"][0]
    assert {
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
    } <= set(match)
    assert {"embedding_weight": 0.4, "rerank_weight": 0.4, "string_similarity_weight": 0.2}.items() <= match[
        "scoring_details"
    ].items()
    decision = body["routing_decision"]
    assert {
        "would_route_to",
        "selected_template",
        "selection_score",
        "embedding_score",
        "rerank_score",
        "string_similarity_score",
        "reason",
    } <= set(decision)
    assert decision["reason"] == "highest_combined_score_above_threshold"
    assert decision["rerank_score"] == match["rerank_score"] is not None
    config = body["configuration"]
    assert config["reranking_enabled"] is True and config["multistage_enabled"] is True
    assert config["scoring_weights"] == {"embedding": 0.4, "reranking": 0.4, "string_similarity": 0.2}
    assert body["matches_above_threshold"] == sum(m["above_threshold"] for m in body["all_matches"])


async def test_reranker_is_called_only_when_enabled(runtime, apis):
    before = len(apis.anthropic.requests), len(apis.cohere.requests)
    _, meta = await ask(runtime)  # the global block has reranking off
    assert (len(apis.anthropic.requests), len(apis.cohere.requests)) == before
    assert meta["multistage_scoring"]["rerank_score"] is None


async def test_top_candidates_limits_what_is_sent(runtime, apis):
    before = len(apis.anthropic.requests)
    result, _ = await ask(runtime, **reranking(top_candidates=2))
    _, texts = parse_prompt(apis.anthropic.requests[before].body)
    assert len(texts) == 2
    by_emb = sorted(result.outcome.candidates, key=lambda c: -c.embedding_score)
    assert [c.stage_score("rerank") is not None for c in by_emb] == [True, True] + [False] * 4


async def test_rerank_weight_changes_the_combined_score(runtime, apis):
    _, light = await ask(runtime, **reranking(weight=0.1))
    _, heavy = await ask(runtime, **reranking(weight=2.0))
    assert light["multistage_scoring"]["scoring_details"]["rerank_weight"] == 0.1
    h = heavy["multistage_scoring"]
    assert h["combined_score"] == pytest.approx(
        (0.4 * h["embedding_score"] + 2.0 * h["rerank_score"] + 0.2 * h["string_similarity_score"]) / 2.6, abs=3e-4
    )
    assert h["combined_score"] != light["multistage_scoring"]["combined_score"]


async def test_reranker_can_change_the_winner(runtime, apis):
    """A reranker that prefers the sales templates overrides the embedding's choice."""

    def prefers_sales(query: str, docs: list[str]) -> list[float]:
        return [1.0 if "customer" in d.lower() or "revenue" in d.lower() or "order" in d.lower() else 0.0 for d in docs]

    apis.anthropic.enqueue(Reply.scored(prefers_sales))
    _, meta = await ask(runtime, **reranking(weight=5.0))
    assert meta["selected_adapter"] == "sales"


# ---- Cohere --------------------------------------------------------------------------------------


async def test_cohere_rerank_api(runtime, apis):
    before = len(apis.cohere.requests)
    result, meta = await ask(runtime, **reranking("cohere"))
    new = apis.cohere.requests[before:]
    assert len(new) == 1 and new[0].path == "/v2/rerank"
    assert new[0].body["query"] == Q and len(new[0].body["documents"]) == 6
    docs = new[0].body["documents"]
    expected = dict(zip(docs, word_overlap(Q, docs), strict=True))
    for c in result.outcome.candidates:
        assert c.stage_score("rerank") == pytest.approx(expected[rerank_text(c)], abs=1e-4)
    assert meta["multistage_scoring"]["rerank_score"] is not None and "stage_errors" not in meta


async def test_openai_chat_reranker(runtime, apis):
    before = len(apis.openai.requests)
    result, meta = await ask(runtime, **reranking("gpt"))
    new = apis.openai.requests[before:]
    assert len(new) == 1 and new[0].body["response_format"]["type"] == "json_schema"
    assert meta["multistage_scoring"]["rerank_score"] is not None and "stage_errors" not in meta
    assert result.status == "executed" and meta["selected_adapter"] == "hr"


async def test_self_hosted_rerank_api(runtime, apis):
    before = len(apis.local.requests)
    result, meta = await ask(runtime, **reranking("local"))
    new = apis.local.requests[before:]
    assert len(new) == 1 and new[0].path == "/rerank" and new[0].body["query"] == Q
    texts = new[0].body["texts"]
    expected = dict(zip(texts, word_overlap(Q, texts), strict=True))
    for c in result.outcome.candidates:
        assert c.stage_score("rerank") == pytest.approx(expected[rerank_text(c)], abs=1e-4)
    assert "stage_errors" not in meta


# ---- failures fall back to the other stages and are reported ---------------------------------------

SLOW_REPLY = 20.0  # seconds a "timeout" stand-in waits before replying (it wakes at once when the stand-in stops)

FAILURES = [
    ("claude", lambda apis: apis.anthropic.enqueue(Reply.error(429)), "anthropic"),
    ("claude", lambda apis: apis.anthropic.enqueue(Reply.malformed_json()), "anthropic"),
    ("claude", lambda apis: apis.anthropic.enqueue(Reply.text()), "anthropic"),
    (
        "claude",
        lambda apis: apis.anthropic.enqueue(Reply.tool_input({"scores": [{"index": 0, "score": "high"}]})),
        "anthropic",
    ),
    ("claude", lambda apis: apis.anthropic.enqueue(Reply.scored().delayed(SLOW_REPLY)), "anthropic"),
    ("cohere", lambda apis: apis.cohere.enqueue(CohereReply.error(429)), "cohere"),
    ("cohere", lambda apis: apis.cohere.enqueue(CohereReply.malformed_json()), "cohere"),
    ("cohere", lambda apis: apis.cohere.enqueue(CohereReply.scored().delayed(SLOW_REPLY)), "cohere"),
    ("gpt", lambda apis: apis.openai.enqueue(OpenAIReply.error(429)), "openai"),
    ("gpt", lambda apis: apis.openai.enqueue(OpenAIReply.error(500)), "openai"),
    ("gpt", lambda apis: apis.openai.enqueue(OpenAIReply.malformed_json()), "openai"),
    ("gpt", lambda apis: apis.openai.enqueue(OpenAIReply.content("not json")), "openai"),
    ("gpt", lambda apis: apis.openai.enqueue(OpenAIReply.scored().delayed(SLOW_REPLY)), "openai"),
    ("local", lambda apis: apis.local.enqueue(RerankApiReply.error(429)), "rerank_api"),
    ("local", lambda apis: apis.local.enqueue(RerankApiReply.error(500)), "rerank_api"),
    ("local", lambda apis: apis.local.enqueue(RerankApiReply.malformed_json()), "rerank_api"),
    ("local", lambda apis: apis.local.enqueue(RerankApiReply.scored().delayed(SLOW_REPLY)), "rerank_api"),
]


@pytest.mark.parametrize(
    "provider, script, prefix",
    FAILURES,
    ids=[
        *("a429", "amalformed", "atext", "abadtool", "atimeout", "c429", "cmalformed", "ctimeout"),
        *("o429", "o500", "omalformed", "oprose", "otimeout", "r429", "r500", "rmalformed", "rtimeout"),
    ],
)
async def test_reranker_failure_falls_back_and_is_reported(runtime, apis, provider, script, prefix):
    script(apis)
    started = time.perf_counter()
    result, meta = await ask(runtime, **reranking(provider))
    # the 2 s reranker timeout held: far sooner than the slow reply (a wide bound: loaded machines). Not 0.5 s:
    # a first call to the stand-in (the SDK's client built) took longer than that on a slow machine
    assert time.perf_counter() - started < SLOW_REPLY / 2
    assert result.status == "executed" and meta["selected_adapter"] == "hr"
    assert result.body["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
    [error] = meta["stage_errors"]
    assert error["stage"] == "rerank" and error["error"].startswith(f"{prefix}: ")
    assert RAW_TEXT_MARKER not in str(result.body)
    ms = meta["multistage_scoring"]
    assert ms["rerank_score"] is None
    # weights renormalised over the stages that scored
    assert ms["combined_score"] == pytest.approx(
        (0.4 * ms["embedding_score"] + 0.2 * ms["string_similarity_score"]) / 0.6, abs=3e-4
    )


async def test_failed_rerank_is_not_cached_and_test_routing_reports_it(runtime, apis):
    composite = make_composite(runtime, ["hr", "sales"], **reranking())
    apis.anthropic.enqueue(Reply.error(429))
    before = len(apis.anthropic.requests)
    body = (await answering.explain_routing(composite, Q)).body
    assert body["stage_errors"][0]["stage"] == "rerank"
    body = (await answering.explain_routing(composite, Q)).body
    await composite.close()
    assert len(apis.anthropic.requests) == before + 2  # the failure was not remembered as a score
    assert body["stage_errors"] == [] and body["routing_decision"]["rerank_score"] is not None


# ---- cache: (question, adapter, template_id), TTL, size bound -----------------------------------------


async def route_n(composite, questions: Sequence[str]) -> None:
    for q in questions:
        await answering.explain_routing(composite, q)


async def test_cache_saves_repeat_calls_per_question(runtime, apis):
    composite = make_composite(runtime, ["hr", "sales"], **reranking())
    before = len(apis.anthropic.requests)
    await route_n(composite, [Q, Q, Q])
    assert len(apis.anthropic.requests) == before + 1
    await route_n(composite, ["quarterly revenue please"])
    assert len(apis.anthropic.requests) == before + 2
    uncached = make_composite(runtime, ["hr", "sales"], **reranking(), performance={"cache_rerank_results": False})
    before = len(apis.anthropic.requests)
    await route_n(uncached, [Q, Q])
    assert len(apis.anthropic.requests) == before + 2
    await composite.close()
    await uncached.close()


async def test_cache_is_keyed_by_adapter_and_template(runtime, apis):
    """hr and hr_twin offer the same template ids: both are sent, scored and cached separately."""
    distinct = {"hr": 0.9, "hr_twin": 0.2}

    def by_position(query: str, docs: list[str]) -> list[float]:
        return [0.9 if i % 2 == 0 else 0.2 for i in range(len(docs))]

    composite = make_composite(runtime, ["hr", "hr_twin"], **reranking())
    apis.anthropic.enqueue(Reply.scored(by_position))
    first = (await answering.explain_routing(composite, Q)).body
    _, texts = parse_prompt(apis.anthropic.requests[-1].body)
    assert len(texts) == 6  # the same templates twice: two keys each
    before = len(apis.anthropic.requests)
    second = (await answering.explain_routing(composite, Q)).body
    assert len(apis.anthropic.requests) == before  # all six from the cache
    pairs = lambda body: {(m["source_adapter"], m["template_id"]): m["rerank_score"] for m in body["all_matches"]}  # noqa: E731
    assert pairs(first) == pairs(second) and len(pairs(first)) == 6
    assert set(pairs(first).values()) <= set(distinct.values())
    await composite.close()


async def test_cache_ttl_expires_entries(runtime, apis):
    composite = make_composite(runtime, ["hr", "sales"], **reranking(), performance={"cache_ttl_seconds": 0.3})
    before = len(apis.anthropic.requests)
    await route_n(composite, [Q, Q])
    assert len(apis.anthropic.requests) == before + 1
    await asyncio.sleep(0.35)
    await route_n(composite, [Q])
    assert len(apis.anthropic.requests) == before + 2
    await composite.close()


@pytest.mark.parametrize("max_entries, extra_calls", [(6, 1), (12, 0)])
async def test_cache_max_entries_bounds_the_cache(runtime, apis, max_entries, extra_calls):
    """Each question caches six (adapter, template) scores; a bound of six keeps only the latest question."""
    composite = make_composite(runtime, ["hr", "sales"], **reranking(), performance={"cache_max_entries": max_entries})
    await route_n(composite, [Q, "quarterly revenue please"])
    before = len(apis.anthropic.requests)
    await route_n(composite, [Q])
    assert len(apis.anthropic.requests) == before + extra_calls
    await composite.close()


# ---- parallel_rerank ---------------------------------------------------------------------------------


class WaitingStage(ScoringStage):
    """A scoring stage of the test's own that waits on I/O, like a second remote service."""

    name = "waiting"
    weight = 0.0

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        await asyncio.sleep(self.seconds)
        return StageReport(self.name)


@pytest.mark.parametrize("parallel", [True, False])
async def test_parallel_rerank_runs_stages_concurrently(runtime, apis, parallel):
    composite = make_composite(
        runtime,
        ["hr", "sales"],
        **reranking(),
        performance={"parallel_rerank": parallel, "cache_rerank_results": False},
    )
    router = Router(composite.routing_policy(), [WaitingStage(0.3), *composite.routing_stages()])
    apis.anthropic.enqueue(Reply.scored().delayed(0.3))
    outcome = await router.route(Q, composite.routing_sources())
    await composite.close()
    timings = outcome.timings_ms
    assert timings["waiting"] >= 290 and timings["rerank"] >= 290
    stages_wall = timings["total"] - timings["embed"] - timings["search"] - timings["decision"]
    if parallel:
        assert stages_wall < 500
    else:
        assert stages_wall >= 590
    assert outcome.decision.selected.stage_score("rerank") is not None

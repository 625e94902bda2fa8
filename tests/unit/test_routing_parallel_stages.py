"""parallel_rerank: a remote stage is started before local ones, so its wait overlaps their work."""

from __future__ import annotations

import asyncio
import time

from server.routing.candidates import Candidate
from server.routing.policy import RoutingPolicy
from server.routing.router import Router
from server.routing.settings import CompositeRetrievalSettings
from server.routing.stages.base import ScoringStage, StageReport
from server.templates import Template


class BusyLocalStage(ScoringStage):
    """Blocks the event loop like CPU-bound scoring does."""

    name, weight = "string_similarity", 0.2

    async def score(self, question, candidates):
        time.sleep(0.25)
        for c in candidates:
            c.stage_scores["string_similarity"] = 0.5
        return StageReport(self.name)


class WaitingRemoteStage(ScoringStage):
    name, weight, remote = "rerank", 0.4, True

    async def score(self, question, candidates):
        await asyncio.sleep(0.25)  # a request in flight
        for c in candidates:
            c.stage_scores["rerank"] = 0.5
        return StageReport(self.name)


async def run(parallel: bool) -> float:
    retrieval = CompositeRetrievalSettings.model_validate({"performance": {"parallel_rerank": parallel}})
    router = Router(
        RoutingPolicy(confidence_threshold=0.1, retrieval=retrieval), [BusyLocalStage(), WaitingRemoteStage()]
    )  # local first in config order
    cands = [Candidate("a", Template(id="t", description="d", body_key="sql", body="SELECT 1"), 0.8)]
    started = time.perf_counter()
    reports = await router._run_stages("q", cands, {})
    assert [r.stage for r in reports] == ["string_similarity", "rerank"]  # reported in config order
    return time.perf_counter() - started


async def test_parallel_starts_remote_stage_first_and_overlaps():
    assert await run(parallel=True) < 0.4


async def test_sequential_runs_stages_one_after_another():
    assert await run(parallel=False) >= 0.5

"""parallel_rerank: a remote stage is started before local ones, so its wait overlaps their work. Told by
the order of what the stages do (no wall-clock bound: a timing flakes on a loaded machine)."""

from __future__ import annotations

import asyncio

from server.routing.candidates import Candidate
from server.routing.policy import RoutingPolicy
from server.routing.router import Router
from server.routing.settings import CompositeRetrievalSettings
from server.routing.stages.base import ScoringStage, StageReport
from server.templates import Template


class BusyLocalStage(ScoringStage):
    """Works without yielding to the event loop, like CPU-bound scoring does."""

    name, weight = "string_similarity", 0.2

    def __init__(self, events: list[str]) -> None:
        self.events = events

    async def score(self, question, candidates):
        self.events.append("local starts")
        for c in candidates:
            c.stage_scores["string_similarity"] = 0.5
        self.events.append("local ends")
        return StageReport(self.name)


class WaitingRemoteStage(ScoringStage):
    name, weight, remote = "rerank", 0.4, True

    def __init__(self, events: list[str]) -> None:
        self.events = events

    async def score(self, question, candidates):
        self.events.append("remote request sent")
        await asyncio.sleep(0)  # the request is in flight: the event loop runs whatever else is ready
        for c in candidates:
            c.stage_scores["rerank"] = 0.5
        self.events.append("remote answer read")
        return StageReport(self.name)


async def run(parallel: bool) -> list[str]:
    retrieval = CompositeRetrievalSettings.model_validate({"performance": {"parallel_rerank": parallel}})
    events: list[str] = []
    router = Router(
        RoutingPolicy(confidence_threshold=0.1, retrieval=retrieval),
        [BusyLocalStage(events), WaitingRemoteStage(events)],
    )  # local first in config order
    cands = [Candidate("a", Template(id="t", description="d", body_key="sql", body="SELECT 1"), 0.8)]
    reports = await router._run_stages("q", cands, {})
    assert [r.stage for r in reports] == ["string_similarity", "rerank"]  # reported in config order
    return events


async def test_parallel_starts_remote_stage_first_and_overlaps():
    # the remote request is in flight while the local stage works
    assert await run(parallel=True) == ["remote request sent", "local starts", "local ends", "remote answer read"]


async def test_sequential_runs_stages_one_after_another():
    assert await run(parallel=False) == ["local starts", "local ends", "remote request sent", "remote answer read"]

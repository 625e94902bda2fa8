"""Rerank stage: one batched call to the configured reranker for the top candidates, cached with a TTL.

A reranker failure (timeout, 429, malformed reply) is reported in the stage report and leaves the
candidates without a rerank score; the combiner then renormalises over the stages that did score,
so routing still works on embedding and string similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..candidates import Candidate
from ..rerankers.base import Reranker, RerankError, RerankItem
from ..rerankers.cache import RerankCache
from ..settings import PerformanceSettings, RerankingSettings
from .base import ScoringStage, StageReport

log = logging.getLogger("intent_router.routing.rerank")


def rerank_text(candidate: Candidate) -> str:
    template = candidate.template
    examples = "; ".join(template.nl_examples)
    return f"{template.description}. Examples: {examples}" if examples else template.description


class RerankStage(ScoringStage):
    name = "rerank"
    remote = True

    def __init__(self, settings: RerankingSettings, performance: PerformanceSettings, reranker: Reranker) -> None:
        self.settings = settings
        self.weight = settings.weight
        self.reranker = reranker
        self.cache = (
            RerankCache(performance.cache_ttl_seconds, performance.cache_max_entries)
            if performance.cache_rerank_results
            else None
        )
        self.calls = 0  # provider calls made (cache hits make none)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        top = sorted(candidates, key=lambda c: -c.embedding_score)[: self.settings.top_candidates]
        keys = [c.key for c in top]
        scores = self.cache.get_many(question, keys) if self.cache is not None else {}
        todo = [c for c in top if c.key not in scores]
        error = None
        if todo:
            try:
                self.calls += 1
                fresh = await self.reranker.rerank(question, [RerankItem(c.key, rerank_text(c)) for c in todo])
            except RerankError as exc:
                log.warning("reranking failed, routing on the other stages: %s", exc)
                error = str(exc)
                fresh = {}
            if self.cache is not None and fresh:  # not `if self.cache`: an empty cache has len 0
                self.cache.put_many(question, fresh)
            scores.update(fresh)
        for cand in top:
            if (value := scores.get(cand.key)) is not None:
                cand.stage_scores[self.name] = value
        return StageReport(self.name, error=error)

    async def close(self) -> None:
        await self.reranker.close()

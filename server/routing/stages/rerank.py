"""Rerank stage: one batched call to the configured reranker for the top candidates, cached (rerankers/cache.py).

A reranker failure (timeout, 429, malformed reply) is reported in the stage report and leaves the
candidates without a rerank score; the combiner then renormalises over the stages that did score,
so routing still works on embedding and string similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ...rerankers.base import Reranker, RerankError, RerankItem
from ...rerankers.cache import ScoreCache, entry_id
from ..candidates import Candidate
from ..settings import RerankingSettings
from .base import ScoringStage, StageReport

log = logging.getLogger("intent_router.routing.rerank")


def rerank_text(candidate: Candidate) -> str:
    template = candidate.template
    examples = "; ".join(template.nl_examples)
    return f"{template.description}. Examples: {examples}" if examples else template.description


class RerankStage(ScoringStage):
    name = "rerank"
    remote = True

    def __init__(
        self, settings: RerankingSettings, reranker: Reranker, identity: str, cache: ScoreCache | None
    ) -> None:
        self.settings = settings
        self.weight = settings.weight
        self.reranker = reranker
        self.identity = identity  # rerankers/cache.py reranker_identity: scores of other models never mix
        self.cache = cache
        self.calls = 0  # provider calls made (cache hits make none)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        top = sorted(candidates, key=lambda c: -c.embedding_score)[: self.settings.top_candidates]
        texts = {c.key: rerank_text(c) for c in top}
        ids = {key: entry_id(self.identity, question, key, text) for key, text in texts.items()}
        cached = await self.cache.get_many(ids.values()) if self.cache is not None else {}
        scores = {key: cached[id_] for key, id_ in ids.items() if id_ in cached}
        todo = [key for key in texts if key not in scores]
        error = None
        if todo:
            try:
                self.calls += 1
                fresh = await self.reranker.rerank(question, [RerankItem(key, texts[key]) for key in todo])
            except RerankError as exc:
                log.warning("reranking failed, routing on the other stages: %s", exc)
                error = str(exc)
                fresh = {}
            if self.cache is not None and fresh:
                await self.cache.put_many({ids[key]: value for key, value in fresh.items()})
            scores.update(fresh)
        for cand in top:
            if (value := scores.get(cand.key)) is not None:
                cand.stage_scores[self.name] = value
        return StageReport(self.name, error=error)

    async def close(self) -> None:
        await self.reranker.close()

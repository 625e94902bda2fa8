"""A scoring stage fills one score on each candidate; the combiner weighs them afterwards."""

from __future__ import annotations

import asyncio
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...coalescing import Coalescer
from ...embedding.batching import BatchStats
from ...named_threads import NamedPool
from ..candidates import Candidate

T = TypeVar("T")
# a stage's arithmetic when it is too large for the event loop (numpy releases the GIL in its products);
# its own threads, so that store search and query execution never wait behind it
SCORING_POOL = NamedPool(2, thread_name_prefix="router-scoring")


async def run_scoring(fn: Callable[[], T]) -> T:
    """`fn()` on SCORING_POOL, awaited from the event loop."""
    return await asyncio.get_running_loop().run_in_executor(SCORING_POOL, fn)


@dataclass
class StageReport:
    """What a stage reports beyond its scores: a failure it recovered from (shown in metadata)."""

    stage: str
    error: str | None = None


class ScoringStage(ABC):
    name: str  # "rerank" | "string_similarity" | ...
    weight: float
    remote: bool = False  # waits on the network: started first when stages run in parallel
    # score_many does its arithmetic over all the questions at once: concurrent requests share one call
    batches: bool = False
    _coalescer: Coalescer[tuple[str, Sequence[Candidate]], StageReport] | None = None

    @abstractmethod
    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        """Set this stage's score on every candidate it can; never raise for a provider failure."""

    async def score_many(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]
    ) -> list[StageReport]:
        """`score` for several questions (fit-thresholds); stages whose arithmetic batches override it."""
        return [await self.score(q, c) for q, c in zip(questions, candidates, strict=True)]

    async def score_request(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        """`score` on the request path: a batching stage scores the questions of concurrent requests in one
        `score_many` (server/coalescing.py); the others score each on its own."""
        if not self.batches:
            return await self.score(question, candidates)
        if self._coalescer is None:
            self._coalescer = Coalescer(f"stage-{self.name}", self._score_items)
        return await self._coalescer.submit((question, candidates))

    async def _score_items(self, items: list[tuple[str, Sequence[Candidate]]]) -> list[StageReport]:
        return await self.score_many([question for question, _ in items], [candidates for _, candidates in items])

    @property
    def coalescing(self) -> BatchStats | None:
        """How many questions shared each `score_many` on the request path (None: not a batching stage, or
        no request scored yet)."""
        return self._coalescer.stats if self._coalescer is not None else None

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""


class LocalStage(ScoringStage):
    """A stage whose scoring is arithmetic in this process, split in two: `prefetch` awaits what the
    questions need (on the event loop), `work` scores (pure computation: any thread may run it). So the
    composite's request path can run the search and every local stage in ONE job on a thread
    (routing/batches.py) instead of a hand-over per step; alone, a stage runs its work in place or, when
    `heavy`, on SCORING_POOL."""

    batches = True

    async def prefetch(self, questions: Sequence[str]) -> Any:
        """What `work` needs that must be awaited, for these questions (default: nothing)."""
        return None

    @abstractmethod
    def work(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any
    ) -> list[StageReport]:
        """Score every question's candidates (writes `stage_scores`); no event loop, no awaiting. `questions`
        are those `prefetch` fetched for, in the same order (a question may have no candidates)."""

    @abstractmethod
    def heavy(self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]], fetched: Any) -> bool:
        """Whether `work` costs more than a hop to a thread (then it leaves the event loop)."""

    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        return (await self.score_many([question], [candidates]))[0]

    async def score_many(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]
    ) -> list[StageReport]:
        fetched = await self.prefetch(questions)
        job = functools.partial(self.work, questions, candidates, fetched)
        return await run_scoring(job) if self.heavy(questions, candidates, fetched) else job()

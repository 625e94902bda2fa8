"""Concurrent questions scored by one `score_many` call: what the encoder's micro-batching does for
the forward pass, done for a stage whose arithmetic batches (the intent model).

Questions whose embeddings come back in one encoder batch reach the stages in the same turn of the
event loop; scoring them one by one pays the stage's fixed cost (dozens of small numpy calls) once
per question, in the thread that also serves HTTP. Here every call made within one turn of the loop
joins the same `score_many`, run at the start of the next turn. Nothing waits on purpose: a lone
question is scored one loop turn later than it would have been.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ...embedding.batching import BatchStats
from ..candidates import Candidate

Report = TypeVar("Report")
ScoreMany = Callable[[Sequence[str], Sequence[Sequence[Candidate]]], Awaitable[list[Report]]]


@dataclass
class _Waiting(Generic[Report]):
    question: str
    candidates: Sequence[Candidate]
    future: asyncio.Future[Report]


@dataclass
class StageCoalescer(Generic[Report]):
    """`score(question, candidates)` for one stage, answered from a shared `score_many` call."""

    name: str
    score_many: ScoreMany[Report]
    stats: BatchStats = field(default_factory=BatchStats)
    _waiting: list[_Waiting[Report]] = field(default_factory=list)

    async def score(self, question: str, candidates: Sequence[Candidate]) -> Report:
        loop = asyncio.get_running_loop()
        if not self._waiting:
            loop.call_soon(self._start)
        waiting: _Waiting[Report] = _Waiting(question, candidates, loop.create_future())
        self._waiting.append(waiting)
        return await waiting.future

    def _start(self) -> None:
        batch, self._waiting = self._waiting, []
        asyncio.get_running_loop().create_task(self._score(batch), name=f"stage-{self.name}")

    async def _score(self, batch: list[_Waiting[Report]]) -> None:
        self.stats.record(len(batch))
        try:
            reports = await self.score_many([w.question for w in batch], [w.candidates for w in batch])
        except asyncio.CancelledError:  # shutting down
            for w in batch:
                w.future.cancel()
            raise
        except Exception as exc:  # each caller sees what its own `score` would have raised
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        for w, report in zip(batch, reports, strict=True):
            if not w.future.done():  # its request may have been cancelled (client gone, timeout)
                w.future.set_result(report)

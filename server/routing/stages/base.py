"""A scoring stage fills one score on each candidate; the combiner weighs them afterwards."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from ..candidates import Candidate


@dataclass
class StageReport:
    """What a stage reports beyond its scores: a failure it recovered from (shown in metadata)."""

    stage: str
    error: str | None = None


class ScoringStage(ABC):
    name: str  # "rerank" | "string_similarity" | ...
    weight: float
    remote: bool = False  # waits on the network: started first when stages run in parallel

    @abstractmethod
    async def score(self, question: str, candidates: Sequence[Candidate]) -> StageReport:
        """Set this stage's score on every candidate it can; never raise for a provider failure."""

    async def score_many(
        self, questions: Sequence[str], candidates: Sequence[Sequence[Candidate]]
    ) -> list[StageReport]:
        """`score` for several questions (fit-thresholds); stages whose arithmetic batches override it."""
        return [await self.score(q, c) for q, c in zip(questions, candidates, strict=True)]

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients."""

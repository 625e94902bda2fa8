"""A candidate template and the scores each stage gave it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..templates import Template

if TYPE_CHECKING:
    from ..intent.acceptance import Judgement

EMBEDDING = "embedding"


@dataclass
class Candidate:
    adapter: str
    template: Template
    embedding_score: float
    matched_text: str = ""
    source_order: int = 0  # position of the owning child in config order: ties go to the first
    # scores of the stages that ran after the embedding search, by stage name ("rerank",
    # "string_similarity", "intent_model", ...): a new stage needs no new field anywhere
    stage_scores: dict[str, float] = field(default_factory=dict)
    # acceptance (intent/acceptance.py): P(this template answers the question), its threshold, the verdict
    acceptance: float | None = None
    acceptance_threshold: float | None = None
    acceptance_judgement: Judgement | None = None
    query_vector: Any = None  # the question's embedding in this candidate's model space
    raw_embedding_score: float | None = None  # the model's own cosine, when embedding_score is calibrated
    combined_score: float | None = None
    scoring_details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.adapter, self.template.id)

    @property
    def accepted(self) -> bool | None:
        """The acceptance model's verdict; None when it did not judge this candidate."""
        if self.acceptance is None or self.acceptance_threshold is None:
            return None
        return self.acceptance >= self.acceptance_threshold

    @property
    def acceptance_parts(self) -> dict[str, Any] | None:
        """The features behind the acceptance probability and their contributions (built when asked)."""
        return None if self.acceptance_judgement is None else self.acceptance_judgement.parts()

    @property
    def score(self) -> float:
        """The score decisions use: combined when stages ran, else the embedding score."""
        return self.combined_score if self.combined_score is not None else self.embedding_score

    def stage_score(self, stage: str) -> float | None:
        """Any stage's score, the embedding search included (None: the stage did not judge it)."""
        return self.embedding_score if stage == EMBEDDING else self.stage_scores.get(stage)

    def all_stage_scores(self) -> dict[str, float]:
        """Every stage's score for this candidate, embedding first."""
        return {EMBEDDING: self.embedding_score, **self.stage_scores}


@dataclass(frozen=True)
class SourceFailure:
    adapter: str
    reason: str
    kind: str = "search"  # "search" | "timeout" (the search) | "embedding": how the routing log counts it

    def to_json(self) -> dict[str, str]:
        return {"adapter": self.adapter, "reason": self.reason}

"""Build the scoring stages a composite's retrieval settings ask for."""

from __future__ import annotations

from ..settings import CompositeRetrievalSettings
from .base import ScoringStage
from .string_similarity import StringSimilarityStage


def build_stages(retrieval: CompositeRetrievalSettings, extra: list[ScoringStage] | None = None) -> list[ScoringStage]:
    stages: list[ScoringStage] = list(extra or [])
    if retrieval.string_similarity.enabled:
        stages.append(StringSimilarityStage(retrieval.string_similarity))
    return stages

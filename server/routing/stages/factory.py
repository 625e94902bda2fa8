"""Build the scoring stages a composite's retrieval settings ask for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..fitted_models import FittedModels
from ..rerankers.factory import build_reranker
from ..rerankers.settings import RerankerSettings
from ..settings import CompositeRetrievalSettings
from .base import ScoringStage
from .intent_model import IntentModelStage
from .rerank import RerankStage
from .string_similarity import StringSimilarityStage


def build_stages(
    retrieval: CompositeRetrievalSettings,
    rerankers: Mapping[str, RerankerSettings],
    fitted: FittedModels,
    root: Path | None = None,
) -> list[ScoringStage]:
    """Local stages first (string similarity, intent model), then the reranker when enabled.

    `root` is the config directory (relative cache paths start there)."""
    stages: list[ScoringStage] = []
    if retrieval.string_similarity.enabled:
        stages.append(StringSimilarityStage(retrieval.string_similarity))
    if retrieval.intent_model.enabled:
        stages.append(IntentModelStage(retrieval.intent_model, fitted, retrieval.acceptance, root))
    rerank = retrieval.reranking
    if rerank.enabled:
        assert rerank.provider is not None  # checked when the config loaded
        reranker = build_reranker(rerank.provider, rerankers[rerank.provider])
        stages.append(RerankStage(rerank, retrieval.performance, reranker))
    return stages

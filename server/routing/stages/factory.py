"""Build the scoring stages a composite's retrieval settings ask for."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...intent.fitted_models import FittedModels
from ...rerankers.cache import reranker_identity
from ...rerankers.factory import build_reranker
from ...rerankers.settings import RerankerSettings
from ...rerankers.shared_cache import SharedRerankCache, score_cache_for
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
    composite: str = "",
    shared_rerank_cache: SharedRerankCache | None = None,
) -> list[ScoringStage]:
    """Local stages first (string similarity, intent model), then the reranker when enabled.

    `root` is the config directory (relative cache paths start there); rerank scores are cached in
    `shared_rerank_cache` (Redis) under the composite's name when given, else in the stage."""
    stages: list[ScoringStage] = []
    if retrieval.string_similarity.enabled:
        stages.append(StringSimilarityStage(retrieval.string_similarity))
    if retrieval.intent_model.enabled:
        stages.append(IntentModelStage(retrieval.intent_model, fitted, retrieval.acceptance, root))
    rerank = retrieval.reranking
    if rerank.enabled:
        assert rerank.provider is not None  # checked when the config loaded
        settings = rerankers[rerank.provider]
        reranker = build_reranker(rerank.provider, settings)
        cache = score_cache_for(retrieval.performance, shared_rerank_cache, composite)
        stages.append(RerankStage(rerank, reranker, reranker_identity(settings), cache))
    return stages

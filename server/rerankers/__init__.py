"""Rerankers: one batched provider call scores every candidate template for a question.

Public interface: `Reranker`, `RerankItem`, `RerankError` (base), `RerankerSettings`
(the `rerankers:` config section), `build_reranker` (factory) and `RerankCache`.
"""

from .base import Reranker, RerankError, RerankItem, RerankKey
from .cache import RerankCache, RerankCacheStats
from .factory import RerankerConfigError, build_reranker
from .settings import RerankerSettings

__all__ = [
    "RerankCache",
    "RerankCacheStats",
    "RerankError",
    "RerankItem",
    "RerankKey",
    "Reranker",
    "RerankerConfigError",
    "RerankerSettings",
    "build_reranker",
]

"""Text embeddings: the Embedder interface, the local MiniLM and OpenAI-compatible providers, and the cache."""

from server.embedding.base import Embedder, EmbeddingError
from server.embedding.cache import CachedEmbedder, CacheStats
from server.embedding.factory import build_embedder
from server.embedding.settings import EmbeddingCacheSettings, EmbeddingSettings

__all__ = [
    "CacheStats",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCacheSettings",
    "EmbeddingError",
    "EmbeddingSettings",
    "build_embedder",
]

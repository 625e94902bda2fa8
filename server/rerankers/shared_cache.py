"""Where composites keep rerank scores: in each composite (memory, the default) or in Redis, shared by every
replica so a question reranked on one is not paid for again on another.

The `rerank_cache:` block chooses the backend for the whole deployment; each composite's lifetime and
bound stay in its `composite_retrieval.performance` (`cache_ttl_seconds`, `cache_max_entries`). In Redis a
composite's scores are keys `<key_prefix><composite>:<entry id>` that expire after `cache_ttl_seconds`,
and a sorted set `<key_prefix><composite>:~index` caps their number at `cache_max_entries` (oldest
written first out). Redis down or slower than `timeout`: a miss (the reranker is asked), logged once,
shown in /health, recovering by itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from pydantic import Field

from ..config.backend import BackendChoice
from ..shared_redis import RedisLink, capped_write
from .cache import RerankCache, ScoreCache
from .settings import PerformanceSettings

log = logging.getLogger("intent_router.routing.rerank_cache")


class RerankCacheSettings(BackendChoice):
    """The `rerank_cache:` block: where composites keep rerank scores (memory: each composite its own; redis:
    shared by the replicas). Their lifetime and bound per composite stay in `composite_retrieval.performance`."""

    redis_only = ("url", "key_prefix", "timeout")

    key_prefix: str = Field(
        "intent_router:rerank:",
        min_length=1,
        max_length=200,
        description="redis only: prefix of the Redis keys; one per deployment",
    )
    timeout: float = Field(
        0.5, gt=0, description="redis only: seconds a Redis round trip may take before it counts as a miss"
    )


class SharedRerankCache:
    """The Redis connection every composite's scores go through; one per runtime, kept across reloads
    while the `rerank_cache:` block is unchanged."""

    def __init__(self, settings: RerankCacheSettings) -> None:
        self.link = RedisLink(settings.redis_url, settings.timeout, "rerank cache", "asking the reranker", log)
        self.prefix = settings.key_prefix

    def for_composite(self, name: str, ttl_seconds: float, max_entries: int) -> RedisRerankCache:
        return RedisRerankCache(self.link, f"{self.prefix}{name}:", ttl_seconds, max_entries)

    def health(self) -> dict[str, object]:
        return self.link.health()

    async def recheck(self) -> None:
        await self.link.recheck()

    async def close(self) -> None:
        await self.link.close()


class RedisRerankCache(ScoreCache):
    """One composite's scores in Redis: one MGET per question, one pipelined write per reranker call."""

    def __init__(self, link: RedisLink, prefix: str, ttl_seconds: float, max_entries: int) -> None:
        self.link = link
        self.prefix = prefix
        self.index = prefix + "~index"
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries

    def _key(self, id_: str) -> str:
        return self.prefix + id_

    async def get_many(self, ids: Iterable[str]) -> dict[str, float]:
        wanted = list(ids)
        if not wanted:
            return {}
        values = await self.link.attempt("read", lambda r: r.mget([self._key(i) for i in wanted]))
        if values is None:
            return {}
        return {id_: float(value) for id_, value in zip(wanted, values, strict=True) if value is not None}

    async def put_many(self, scores: Mapping[str, float]) -> None:
        if not scores:
            return
        entries = {id_: repr(float(score)) for id_, score in scores.items()}
        await self.link.attempt(
            "write", lambda r: capped_write(r, self.index, entries, self._key, self.ttl_seconds, self.max_entries)
        )


def build_shared_rerank_cache(settings: RerankCacheSettings) -> SharedRerankCache | None:
    return SharedRerankCache(settings) if settings.backend == "redis" else None


def score_cache_for(
    performance: PerformanceSettings, shared: SharedRerankCache | None, composite: str
) -> ScoreCache | None:
    """A composite's rerank cache: none when it caches no scores, else in Redis when shared, else its own."""
    if not performance.cache_rerank_results:
        return None
    if shared is not None:
        return shared.for_composite(composite, performance.cache_ttl_seconds, performance.cache_max_entries)
    return RerankCache(performance.cache_ttl_seconds, performance.cache_max_entries)

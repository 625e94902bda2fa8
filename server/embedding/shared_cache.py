"""Embeddings shared by every replica in Redis, so a replica that starts with an empty local cache file
embeds only texts no replica has embedded before.

Redis rather than PostgreSQL: a vector is derived data (losing it costs one re-embedding, so PostgreSQL's
durability buys nothing), Redis stores the float32 bytes as they are and reads a batch in one pipelined
round trip, and its per-key expiry bounds what it holds without a pruning job. It is also the engine the
other shared caches and the sessions use, so a deployment runs one engine for them all.

Keys are `<key_prefix><model id>:<sha256(text) hex>` (the local file's key), values the vector's float32
bytes. Every use renews a key's expiry (GETEX when read from Redis, PEXPIRE when a replica found the
vector in its own file), so templates any replica still loads stay, and texts nobody uses any more leave
after `ttl_seconds`: that expiry is what bounds the shared cache. Redis down or slower than `timeout`: the replica
embeds locally (and keeps its local file), logs once, reports /health degraded, and uses Redis again
when it answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..config.types import RedisUrl
from ..shared_redis import SyncRedisLink

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline

T = TypeVar("T")

log = logging.getLogger("intent_router.embedding.shared_cache")

CHUNK = 500  # texts per pipelined round trip


class SharedEmbeddingCacheSettings(BaseModel):
    """`embedding.cache.shared`: absent (the default) keeps embeddings in this replica's file only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: RedisUrl = Field(description="Redis URL, e.g. redis://127.0.0.1:6379/0 (use ${VAR} for a password)")
    key_prefix: str = Field(
        "intent_router:embeddings:",
        min_length=1,
        max_length=200,
        description="prefix of the Redis keys; one per deployment",
    )
    ttl_seconds: float = Field(
        30 * 86_400.0, gt=0, description="a vector no replica read or wrote for this long expires (default 30 days)"
    )
    timeout: float = Field(2.0, gt=0, description="seconds one round trip (up to 500 vectors) may take")


class SharedEmbeddings:
    def __init__(self, settings: SharedEmbeddingCacheSettings) -> None:
        self.settings = settings
        self.link = SyncRedisLink(settings.url, settings.timeout, "embedding cache", "embedding locally", log)

    def _key(self, model_id: str, key: bytes) -> str:
        return f"{self.settings.key_prefix}{model_id}:{key.hex()}"

    def _batches(
        self, action: str, items: Sequence[T], queue: Callable[[Pipeline, T], object]
    ) -> Iterator[tuple[Sequence[T], list[Any]]]:
        """Each chunk of `items` with its results, one pipelined round trip per chunk (`queue` adds one
        item's command); stops at the first round trip Redis does not answer (logged once by the link)."""
        for start in range(0, len(items), CHUNK):
            chunk = items[start : start + CHUNK]

            def run(client: Redis, chunk: Sequence[T] = chunk) -> list[Any]:
                pipe = client.pipeline(transaction=False)
                for item in chunk:
                    queue(pipe, item)
                return pipe.execute()

            results = self.link.attempt(action, run)
            if results is None:
                return
            yield chunk, results

    def get(self, model_id: str, keys: list[bytes], dim: int) -> dict[bytes, np.ndarray]:
        """Stored vectors by text key (blocking: call on a worker thread). `dim` 0: any length."""
        found: dict[bytes, np.ndarray] = {}
        ttl_ms = self._ttl_ms
        for chunk, values in self._batches("read", keys, lambda p, k: p.getex(self._key(model_id, k), px=ttl_ms)):
            for key, blob in zip(chunk, values, strict=True):
                if blob and len(blob) % 4 == 0 and (not dim or len(blob) == dim * 4):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, model_id: str, items: list[tuple[bytes, np.ndarray]]) -> None:
        """Store vectors for every replica (blocking); a failure is logged once and otherwise ignored."""
        ttl_ms = self._ttl_ms

        def queue(pipe: Pipeline, item: tuple[bytes, np.ndarray]) -> None:
            pipe.set(self._key(model_id, item[0]), np.ascontiguousarray(item[1], np.float32).tobytes(), px=ttl_ms)

        for _ in self._batches("write", items, queue):
            pass

    def refresh(self, model_id: str, items: list[tuple[bytes, np.ndarray]]) -> None:
        """Vectors this replica found in its own file: renew their expiry in Redis, and store those Redis
        lacks (embedded here while Redis was down, or expired). Without it, replicas whose files are warm
        would never read Redis, and their templates would expire there for the next new replica."""
        ttl_ms = self._ttl_ms
        renew = self._batches("refresh", items, lambda p, item: p.pexpire(self._key(model_id, item[0]), ttl_ms))
        for chunk, renewed in renew:
            self.put(model_id, [item for item, ok in zip(chunk, renewed, strict=True) if not ok])

    @property
    def _ttl_ms(self) -> int:
        return max(1, round(self.settings.ttl_seconds * 1000))

    def health(self) -> dict[str, object]:
        return self.link.health()

    async def recheck(self) -> None:
        await self.link.recheck()

    def close(self) -> None:
        self.link.close()

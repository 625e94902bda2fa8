"""Query-result cache: a repeated question does not hit the source again while its answer is fresh.

Keyed by adapter, template and the validated parameter values, plus a digest of the adapter's
settings and the template itself, so a reload that changes either can never serve an older answer
(and `forget` empties an adapter explicitly, in Redis through an index of the adapter's keys). In
the process by default (LRU bounded in bytes, result_cache_memory.py), or in Redis so several server
processes share it. A cache that fails (Redis down) is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..config.backend import BackendChoice
from ..shared_redis import RedisLink
from ..templates import ParameterType, Template

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("intent_router.result_cache")

RELATIVE_DATE_TYPES = (ParameterType.DATE, ParameterType.DATETIME)
PURGE_BATCH = 500  # keys per UNLINK when an adapter's entries are dropped
CLOCK_SLACK = 5.0  # seconds: replicas' clocks differ; an index member is pruned only this long after expiry


class ResultCacheSettings(BackendChoice):
    """The `result_cache:` block of config.yaml (backend memory or redis, with its url)."""

    redis_only = ("url", "key_prefix", "timeout")
    memory_only = ("max_entries", "max_bytes", "max_entry_share")

    enabled: bool = Field(True, description="cache answers by adapter, template and validated parameter values")
    # for templates without their own cache_ttl_seconds; templates with date parameters default to 0
    # (off): "last 7 days" means something else tomorrow
    default_ttl_seconds: float = Field(
        60.0,
        ge=0,
        description="lifetime of a cached answer for templates without cache_ttl_seconds (templates with date "
        "parameters are not cached by default)",
    )
    max_entries: int = Field(10_000, ge=1, description="memory only: entries kept (least recently used out first)")
    max_bytes: int = Field(
        64 * 2**20,
        ge=2**16,
        description="memory only: bytes the cached answers may hold together (64 MiB; each answer counted as its "
        "pickled rows plus its key and bookkeeping); least recently used answers leave first",
    )
    max_entry_share: float = Field(
        0.05,
        gt=0,
        le=1,
        description="memory only: an answer larger than this share of max_bytes is not cached (one huge answer "
        "would push out every other)",
    )
    key_prefix: str = Field("intent_router:results:", min_length=1, description="redis only: prefix of the Redis keys")
    timeout: float = Field(
        0.5, gt=0, description="redis only: seconds a Redis round trip may take before it counts as a miss"
    )


@dataclass(frozen=True)
class CachedRows:
    rows: list[dict[str, Any]]
    columns: list[str]
    truncated: bool


def ttl_for(template: Template, settings: ResultCacheSettings) -> float:
    """How long this template's answers stay fresh (0: never cached)."""
    if not settings.enabled:
        return 0.0
    if template.cache_ttl_seconds is not None:
        return template.cache_ttl_seconds
    if any(p.type in RELATIVE_DATE_TYPES or p.item_type in RELATIVE_DATE_TYPES for p in template.parameters):
        return 0.0
    return settings.default_ttl_seconds


def cache_key(adapter: str, scope: str, template: Template, params: dict[str, Any]) -> str:
    """`adapter:digest` of (adapter settings, the template as loaded, the parameter values)."""
    digest = hashlib.sha256()
    digest.update(scope.encode())
    digest.update(template.model_dump_json(exclude={"source_file", "source_line"}).encode())
    digest.update(json.dumps(params, sort_keys=True, default=str).encode())
    return f"{adapter}:{digest.hexdigest()[:40]}"


class ResultCache(ABC):
    @abstractmethod
    async def get(self, key: str) -> CachedRows | None: ...

    @abstractmethod
    async def put(self, key: str, value: CachedRows, ttl: float) -> None: ...

    @abstractmethod
    async def forget(self, adapter: str) -> None:
        """Drop every entry of this adapter (its config changed or it left)."""

    def health(self) -> dict[str, Any] | None:
        """A shared backend's state for /health (None: in this process, nothing to report)."""
        return None

    async def recheck(self) -> None:  # noqa: B027 - a shared backend asks its engine again
        """Before /health reads `health()`: a shared backend that is down tries its engine once more."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class RedisResultCache(ResultCache):
    """Entries as JSON strings with Redis' own expiry; shared by every process with the same prefix."""

    def __init__(self, url: str, prefix: str, timeout: float) -> None:
        self.link = RedisLink(url, timeout, "result cache", "answering from the sources", log)
        self._prefix = prefix
        self._longest: dict[str, float] = {}  # per adapter, the longest lifetime this process wrote

    def health(self) -> dict[str, Any] | None:
        return self.link.health()

    async def recheck(self) -> None:
        await self.link.recheck()

    async def get(self, key: str) -> CachedRows | None:
        raw = await self.link.attempt("read", lambda r: r.get(self._prefix + key))
        if raw is None:
            return None
        data = json.loads(raw)
        return CachedRows(data["rows"], data["columns"], data["truncated"])

    def _index(self, adapter: str) -> str:
        """A sorted set of the adapter's keys by expiry time: what `forget` deletes, without scanning the
        whole database (a shared Redis may hold millions of other keys)."""
        return f"{self._prefix}{adapter}~index"

    async def put(self, key: str, value: CachedRows, ttl: float) -> None:
        payload = json.dumps({"rows": value.rows, "columns": value.columns, "truncated": value.truncated})
        adapter = key.rpartition(":")[0]  # cache_key: "adapter:digest"
        index, now = self._index(adapter), time.time()
        # the index outlives every key this process wrote for the adapter (replicas with the same config
        # write the same lifetimes), so an adapter nobody writes or forgets any more leaves nothing behind
        longest = self._longest[adapter] = max(self._longest.get(adapter, 0.0), ttl)

        async def write(r: Redis) -> None:
            async with r.pipeline(transaction=True) as pipe:  # one round trip
                pipe.set(self._prefix + key, payload, px=max(1, int(ttl * 1000)))
                pipe.zadd(index, {key: now + ttl})
                pipe.zremrangebyscore(index, "-inf", now - CLOCK_SLACK)  # keys Redis has expired
                pipe.pexpire(index, int((longest + CLOCK_SLACK) * 1000))
                await pipe.execute()

        await self.link.attempt("write", write)

    async def forget(self, adapter: str) -> None:
        index = self._index(adapter)

        async def purge(r: Redis) -> None:
            async with r.pipeline(transaction=True) as take:  # read and drop the index at once: a put
                take.zrange(index, 0, -1)  # racing with it starts a new index instead of being lost
                take.delete(index)
                members, _ = await take.execute()
            keys = [m.decode() if isinstance(m, bytes) else str(m) for m in members]
            if keys:
                async with r.pipeline(transaction=False) as drop:  # one round trip; UNLINK frees off-thread
                    for start in range(0, len(keys), PURGE_BATCH):
                        drop.unlink(*(self._prefix + k for k in keys[start : start + PURGE_BATCH]))
                    await drop.execute()

        await self.link.attempt("purge", purge)

    async def close(self) -> None:
        await self.link.close()

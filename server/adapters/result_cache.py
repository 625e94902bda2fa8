"""Query-result cache: a repeated question does not hit the source again while its answer is fresh.

Keyed by adapter, template and the validated parameter values, plus a digest of the adapter's
settings and the template itself, so a reload that changes either can never serve an older answer
(and `forget` empties an adapter explicitly). In the process by default (LRU with a bound), or in
Redis so several server processes share it. A cache that fails (Redis down) is a miss, never an error.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..templates import ParameterType, Template

log = logging.getLogger("intent_router.result_cache")

RELATIVE_DATE_TYPES = (ParameterType.DATE, ParameterType.DATETIME)


class ResultCacheSettings(BaseModel):
    """The `result_cache:` block of config.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    # for templates without their own cache_ttl_seconds; templates with date parameters default to 0
    # (off): "last 7 days" means something else tomorrow
    default_ttl_seconds: float = Field(60.0, ge=0)
    max_entries: int = Field(10_000, ge=1)  # memory backend
    backend: Literal["memory", "redis"] = "memory"
    url: str | None = None  # redis://127.0.0.1:6379/0 for the redis backend
    key_prefix: str = Field("intent_router:results:", min_length=1)
    timeout: float = Field(0.5, gt=0)  # seconds a Redis round trip may take before it counts as a miss

    @model_validator(mode="after")
    def _url_for_redis(self) -> ResultCacheSettings:
        if self.backend == "redis" and not self.url:
            raise ValueError("result_cache.backend redis needs result_cache.url")
        return self


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

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class MemoryResultCache(ResultCache):
    def __init__(self, max_entries: int, clock: Any = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, CachedRows]] = OrderedDict()
        self._max = max_entries
        self._clock = clock

    async def get(self, key: str) -> CachedRows | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if expires <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    async def put(self, key: str, value: CachedRows, ttl: float) -> None:
        self._entries[key] = (self._clock() + ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    async def forget(self, adapter: str) -> None:
        for key in [k for k in self._entries if k.startswith(f"{adapter}:")]:
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)


class RedisResultCache(ResultCache):
    """Entries as JSON strings with Redis' own expiry; shared by every process with the same prefix."""

    def __init__(self, url: str, prefix: str, timeout: float) -> None:
        import redis.asyncio as redis  # only deployments that configure it need the client loaded

        self._redis = redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._prefix = prefix
        self._timeout = timeout
        self._warned = 0.0
        self.unavailable: str | None = None  # why Redis is not answering, while it is not (for /health)

    def health(self) -> dict[str, Any] | None:
        if self.unavailable is None:
            return {"status": "ok", "backend": "redis"}
        return {"status": "down", "backend": "redis", "reason": self.unavailable}

    def _warn(self, what: str, exc: BaseException) -> None:
        self.unavailable = f"redis {what}: {type(exc).__name__}"
        now = time.monotonic()
        if now - self._warned > 60:  # once a minute at most while Redis is down
            self._warned = now
            log.warning("result cache %s failed (answering from the source): %s", what, type(exc).__name__)

    async def get(self, key: str) -> CachedRows | None:
        try:
            raw = await asyncio.wait_for(self._redis.get(self._prefix + key), self._timeout)
        except Exception as exc:
            self._warn("read", exc)
            return None
        self.unavailable = None
        if raw is None:
            return None
        data = json.loads(raw)
        return CachedRows(data["rows"], data["columns"], data["truncated"])

    async def put(self, key: str, value: CachedRows, ttl: float) -> None:
        payload = json.dumps({"rows": value.rows, "columns": value.columns, "truncated": value.truncated})
        try:
            await asyncio.wait_for(
                self._redis.set(self._prefix + key, payload, px=max(1, int(ttl * 1000))), self._timeout
            )
        except Exception as exc:
            self._warn("write", exc)
        else:
            self.unavailable = None

    async def forget(self, adapter: str) -> None:
        try:
            keys = [k async for k in self._redis.scan_iter(match=f"{self._prefix}{adapter}:*", count=500)]
            if keys:
                await self._redis.delete(*keys)
        except Exception as exc:
            self._warn("purge", exc)

    async def close(self) -> None:
        await self._redis.aclose()


def build_result_cache(settings: ResultCacheSettings) -> ResultCache | None:
    if not settings.enabled:
        return None
    if settings.backend == "redis":
        assert settings.url is not None  # checked by the settings model
        return RedisResultCache(settings.url, settings.key_prefix, settings.timeout)
    return MemoryResultCache(settings.max_entries)

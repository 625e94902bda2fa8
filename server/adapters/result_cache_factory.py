"""The result cache `result_cache` names, built apart from the interface that the memory cache builds on."""

from __future__ import annotations

from .result_cache import RedisResultCache, ResultCache, ResultCacheSettings
from .result_cache_memory import MemoryResultCache


def build_result_cache(settings: ResultCacheSettings) -> ResultCache | None:
    if not settings.enabled:
        return None
    if settings.backend == "redis":
        return RedisResultCache(settings.redis_url, settings.key_prefix, settings.timeout)
    return MemoryResultCache(
        settings.max_bytes, int(settings.max_bytes * settings.max_entry_share), settings.max_entries
    )

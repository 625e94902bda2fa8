"""Rerank scores remembered per (query, adapter, template id), so a repeated question costs no
provider call. Entries expire after a TTL and the cache holds at most `max_entries` (least
recently used go first). The clock is injectable so tests need not sleep.

One cache belongs to one reranker: scores from different models are not comparable. Call
`clear()` when templates change (a reload), since a key does not capture the template text.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from .base import RerankKey

_CacheKey = tuple[str, str, str]  # (query, adapter, template id)


@dataclass(frozen=True)
class RerankCacheStats:
    hits: int
    misses: int
    evictions: int  # dropped to respect max_entries
    expirations: int  # dropped because their TTL passed
    size: int


class RerankCache:
    """TTL + LRU-bounded map of rerank scores."""

    def __init__(
        self, ttl_seconds: float, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[_CacheKey, tuple[float, float]] = OrderedDict()  # key -> (expires, score)
        self._hits = self._misses = self._evictions = self._expirations = 0

    def get_many(self, query: str, keys: Iterable[RerankKey]) -> dict[RerankKey, float]:
        """Cached scores for those keys that have a live entry; the rest count as misses."""
        now = self._clock()
        found: dict[RerankKey, float] = {}
        for key in keys:
            cache_key = (query, key[0], key[1])
            entry = self._entries.get(cache_key)
            if entry is not None and entry[0] <= now:
                del self._entries[cache_key]
                self._expirations += 1
                entry = None
            if entry is None:
                self._misses += 1
                continue
            self._entries.move_to_end(cache_key)
            self._hits += 1
            found[key] = entry[1]
        return found

    def put_many(self, query: str, scores: Mapping[RerankKey, float]) -> None:
        """Remember scores for `query`; evicts least recently used entries beyond the bound."""
        expires = self._clock() + self.ttl_seconds
        for (adapter, template_id), score in scores.items():
            cache_key = (query, adapter, template_id)
            self._entries[cache_key] = (expires, score)
            self._entries.move_to_end(cache_key)
        now = self._clock()
        while len(self._entries) > self.max_entries:
            _, (entry_expires, _) = self._entries.popitem(last=False)
            if entry_expires <= now:
                self._expirations += 1
            else:
                self._evictions += 1

    def clear(self) -> None:
        """Forget every score (templates changed); counters are kept."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def stats(self) -> RerankCacheStats:
        return RerankCacheStats(self._hits, self._misses, self._evictions, self._expirations, len(self._entries))

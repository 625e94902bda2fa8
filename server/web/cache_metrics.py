"""The in-process caches' memory in Prometheus, read when Prometheus scrapes: the bytes each holds by its
own accounting, its bound and its entries, for the result cache (memory backend) and each embedding
model's vectors in memory. A flat `bytes` under `max_bytes` is what issue 31's soak looks for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..adapters.result_cache_memory import MemoryResultCache
from ..embedding.cache import CachedEmbedder
from ..runtime.holder import RuntimeHolder


class CacheMemoryCollector(Collector):
    def __init__(self, holder: RuntimeHolder) -> None:
        self.holder = holder

    def collect(self) -> Iterator[Any]:
        held = GaugeMetricFamily(
            "intent_router_cache_bytes", "Bytes a cache holds, by its accounting", labels=["cache"]
        )
        bound = GaugeMetricFamily("intent_router_cache_max_bytes", "The bytes a cache may hold", labels=["cache"])
        entries = GaugeMetricFamily("intent_router_cache_entries", "Entries a cache holds", labels=["cache"])
        try:
            runtime = self.holder.current
        except RuntimeError:  # no config loaded: the families, empty
            runtime = None
        rows: list[tuple[str, int, int, int]] = []
        if runtime is not None:
            cache = runtime.result_cache
            if isinstance(cache, MemoryResultCache):
                rows.append(("result", cache.bytes, cache.max_bytes, len(cache)))
            for embedder in runtime.embedders.values():
                if isinstance(embedder, CachedEmbedder):
                    name = f"embedding:{embedder.model_id}"
                    rows.append((name, embedder.memory_bytes, embedder.memory_max_bytes, embedder.memory_entries))
        for name, size, most, count in rows:
            held.add_metric([name], size)
            bound.add_metric([name], most)
            entries.add_metric([name], count)
        yield from (held, bound, entries)

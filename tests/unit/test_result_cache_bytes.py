"""The in-process result cache is bounded in bytes (issue 31): many large distinct answers stay under
`max_bytes` (the accounted bytes checked against what tracemalloc sees the cache hold), expired answers
leave without being asked for again, and an answer over `max_entry_share` of the budget is not cached."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from server.adapters.result_cache import CachedRows, ResultCacheSettings
from server.adapters.result_cache_factory import build_result_cache
from server.adapters.result_cache_memory import MemoryResultCache
from server.testing.polling import eventually

COLUMNS = ["id", "customer", "amount", "region"]


def answer(i: int, rows: int) -> CachedRows:
    """A distinct answer of `rows` rows (every value differs between answers)."""
    data: list[dict[str, Any]] = [
        {"id": i * 10_000 + r, "customer": f"customer {i}-{r} of the soak", "amount": 12.5 * r + i, "region": "north"}
        for r in range(rows)
    ]
    return CachedRows(data, COLUMNS, False)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_6000_large_distinct_answers_stay_under_max_bytes() -> None:
    max_bytes = 4 * 2**20
    cache = build_result_cache(ResultCacheSettings(max_bytes=max_bytes))
    assert isinstance(cache, MemoryResultCache)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(6000):
            await cache.put(f"sales:{i:040d}", answer(i, 40), 600)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before  # what the cache really holds now
    finally:
        tracemalloc.stop()
    assert cache.bytes <= max_bytes
    assert 0.85 * held <= cache.bytes <= 1.15 * held  # the accounting is what memory really holds
    assert held <= 1.15 * max_bytes
    assert 100 < len(cache) < 6000  # it keeps many answers, not all
    assert (await cache.get(f"sales:{5999:040d}")) == answer(5999, 40)  # the newest is a hit, rows intact
    assert await cache.get(f"sales:{0:040d}") is None  # the oldest left for room
    await cache.close()


async def test_expired_entries_leave_memory_without_a_hit() -> None:
    clock = Clock()
    cache = MemoryResultCache(2**22, 2**20, clock=clock, sweep_seconds=0.01)
    for i in range(200):
        await cache.put(f"sales:{i}", answer(i, 20), 60 if i % 2 else 5)  # two lifetimes, interleaved
    full = cache.bytes
    clock.now += 10  # the 5-second answers have expired; nobody asks for them again
    await eventually(lambda: len(cache) == 100)  # the background sweep drops them
    assert cache.bytes < full * 0.55 and cache.figures().expired == 100
    clock.now += 60
    await eventually(lambda: len(cache) == 0)
    assert cache.bytes == 0
    await cache.close()


async def test_a_write_sweeps_what_expired_before_it() -> None:
    clock = Clock()
    cache = MemoryResultCache(2**22, 2**20, clock=clock, sweep_seconds=3600)  # the timer does not run here
    for i in range(50):
        await cache.put(f"sales:{i}", answer(i, 20), 5)
    clock.now += 6
    await cache.put("sales:new", answer(99, 20), 5)
    assert len(cache) == 1 and cache.figures().expired == 50
    await cache.close()


async def test_an_answer_larger_than_its_share_of_the_budget_is_not_cached() -> None:
    cache = build_result_cache(ResultCacheSettings(max_bytes=2**20, max_entry_share=0.05))  # 52 KB per answer
    assert isinstance(cache, MemoryResultCache)
    await cache.put("sales:small", answer(1, 20), 600)
    await cache.put("sales:large", answer(2, 2000), 600)  # about 100 KB pickled
    assert await cache.get("sales:small") == answer(1, 20)
    assert await cache.get("sales:large") is None and cache.figures().too_large == 1
    await cache.put("sales:small", answer(3, 2000), 600)  # a fresh answer too large for the key: none is kept
    assert await cache.get("sales:small") is None and len(cache) == 0 and cache.bytes == 0
    await cache.close()


async def test_forget_and_replacement_keep_the_accounting_exact() -> None:
    cache = MemoryResultCache(2**22, 2**20)
    await cache.put("a:1", answer(1, 10), 60)
    await cache.put("a:1", answer(2, 30), 60)  # replaced, not added
    await cache.put("b:1", answer(3, 10), 60)
    await cache.forget("a")
    only_b = cache.bytes
    await cache.forget("b")
    assert len(cache) == 0 and cache.bytes == 0 and only_b > 0
    await cache.close()

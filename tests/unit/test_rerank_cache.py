"""RerankCache: TTL expiry on an injected clock, LRU bound, hit/miss accounting."""

from __future__ import annotations

import pytest

from server.routing.rerankers import RerankCache

A = ("hr", "employees_by_department")
B = ("sales", "customers_by_region")
C = ("sales", "revenue_by_quarter")
D = ("movies", "films_by_actor")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_hits_and_misses_are_counted_per_key(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, clock=clock)
    assert cache.get_many("who works in hr", [A, B]) == {}
    cache.put_many("who works in hr", {A: 0.9, B: 0.2})

    assert cache.get_many("who works in hr", [A, B, C]) == {A: 0.9, B: 0.2}
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.size) == (2, 3, 2)


def test_scores_are_per_query(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, clock=clock)
    cache.put_many("who works in hr", {A: 0.9})
    assert cache.get_many("revenue in q4", [A]) == {}
    assert cache.get_many("Who works in HR", [A]) == {}  # the caller normalises; the cache is exact


def test_entries_expire_after_ttl(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, clock=clock)
    cache.put_many("q", {A: 0.7})

    clock.now += 9.99
    assert cache.get_many("q", [A]) == {A: 0.7}
    clock.now += 0.01
    assert cache.get_many("q", [A]) == {}
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.expirations, stats.size) == (1, 1, 1, 0)


def test_put_refreshes_ttl_and_value(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, clock=clock)
    cache.put_many("q", {A: 0.1})
    clock.now += 8
    cache.put_many("q", {A: 0.6})
    clock.now += 8  # 16 s after the first put, 8 s after the second
    assert cache.get_many("q", [A]) == {A: 0.6}


def test_lru_bound_evicts_least_recently_used(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, max_entries=3, clock=clock)
    cache.put_many("q", {A: 0.1, B: 0.2, C: 0.3})
    assert cache.get_many("q", [A]) == {A: 0.1}  # A is now the most recently used

    cache.put_many("q", {D: 0.4})

    assert len(cache) == 3
    assert cache.get_many("q", [A, B, C, D]) == {A: 0.1, C: 0.3, D: 0.4}
    assert cache.stats.evictions == 1


def test_one_oversized_put_keeps_only_the_newest(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, max_entries=2, clock=clock)
    cache.put_many("q", {A: 0.1, B: 0.2, C: 0.3, D: 0.4})
    assert cache.get_many("q", [A, B, C, D]) == {C: 0.3, D: 0.4}
    assert cache.stats.evictions == 2


def test_dropping_an_expired_entry_for_room_is_an_expiration(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, max_entries=1, clock=clock)
    cache.put_many("q", {A: 0.1})
    clock.now += 11
    cache.put_many("q", {B: 0.2})
    stats = cache.stats
    assert (stats.evictions, stats.expirations, stats.size) == (0, 1, 1)


def test_clear_forgets_scores_but_keeps_counters(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, clock=clock)
    cache.put_many("q", {A: 0.5})
    cache.get_many("q", [A])
    cache.clear()
    assert cache.get_many("q", [A]) == {}
    assert (cache.stats.hits, cache.stats.misses, cache.stats.size) == (1, 1, 0)


@pytest.mark.parametrize(("ttl", "max_entries"), [(0, 10), (-1, 10), (10, 0)])
def test_rejects_nonsense_bounds(ttl: float, max_entries: int):
    with pytest.raises(ValueError):
        RerankCache(ttl_seconds=ttl, max_entries=max_entries)


def test_default_clock_is_monotonic_time():
    cache = RerankCache(ttl_seconds=60)
    cache.put_many("q", {A: 0.3})
    assert cache.get_many("q", [A]) == {A: 0.3}

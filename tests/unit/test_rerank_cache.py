"""RerankCache: TTL expiry on an injected clock, LRU bound, hit/miss accounting; entry ids per model,
question, candidate and candidate text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from server.rerankers import RerankCache, RerankerSettings
from server.rerankers.cache import entry_id, reranker_identity
from server.rerankers.shared_cache import RerankCacheSettings

A, B, C, D = "id-a", "id-b", "id-c", "id-d"  # entry ids (entry_id below makes them from what decides a score)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_hits_and_misses_are_counted_per_key(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, clock=clock)
    assert await cache.get_many([A, B]) == {}
    await cache.put_many({A: 0.9, B: 0.2})

    assert await cache.get_many([A, B, C]) == {A: 0.9, B: 0.2}
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.size) == (2, 3, 2)


def test_entry_ids_change_with_everything_that_decides_a_score():
    claude = reranker_identity(RerankerSettings(provider="anthropic", model="claude-haiku-4-5", api_key_env="K"))
    key, text = ("hr", "employees_by_department"), "List employees. Examples: who works in HR?"
    base = entry_id(claude, "who works in hr", key, text)
    assert base == entry_id(claude, "who works in hr", key, text)  # stable: other replicas compute the same
    cohere = reranker_identity(RerankerSettings(provider="cohere", model="rerank-v3.5", api_key_env="K"))
    tei = RerankerSettings(provider="rerank_api", api_format="tei", base_url="http://tei-a:8080")
    others = {
        entry_id(cohere, "who works in hr", key, text),  # another model
        entry_id(reranker_identity(tei), "who works in hr", key, text),  # a self-hosted server ...
        entry_id(
            reranker_identity(tei.model_copy(update={"base_url": "http://tei-b:8080"})), "who works in hr", key, text
        ),
        entry_id(  # the same model name on another server (an OpenAI-compatible proxy or stand-in)
            reranker_identity(
                RerankerSettings(
                    provider="anthropic", model="claude-haiku-4-5", api_key_env="K", base_url="http://proxy:8080"
                )
            ),
            "who works in hr",
            key,
            text,
        ),
        entry_id(claude, "Who works in HR", key, text),  # the caller normalises; ids are exact
        entry_id(claude, "who works in hr", ("hr_twin", key[1]), text),  # same template id, other adapter
        entry_id(claude, "who works in hr", key, text + " Staff list"),  # the template's text changed (a reload)
    }
    assert base not in others and len(others) == 7


async def test_entries_expire_after_ttl(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, clock=clock)
    await cache.put_many({A: 0.7})

    clock.now += 9.99
    assert await cache.get_many([A]) == {A: 0.7}
    clock.now += 0.01
    assert await cache.get_many([A]) == {}
    stats = cache.stats
    assert (stats.hits, stats.misses, stats.expirations, stats.size) == (1, 1, 1, 0)


async def test_put_refreshes_ttl_and_value(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, clock=clock)
    await cache.put_many({A: 0.1})
    clock.now += 8
    await cache.put_many({A: 0.6})
    clock.now += 8  # 16 s after the first put, 8 s after the second
    assert await cache.get_many([A]) == {A: 0.6}


async def test_lru_bound_evicts_least_recently_used(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, max_entries=3, clock=clock)
    await cache.put_many({A: 0.1, B: 0.2, C: 0.3})
    assert await cache.get_many([A]) == {A: 0.1}  # A is now the most recently used

    await cache.put_many({D: 0.4})

    assert len(cache) == 3
    assert await cache.get_many([A, B, C, D]) == {A: 0.1, C: 0.3, D: 0.4}
    assert cache.stats.evictions == 1


async def test_one_oversized_put_keeps_only_the_newest(clock: FakeClock):
    cache = RerankCache(ttl_seconds=300, max_entries=2, clock=clock)
    await cache.put_many({A: 0.1, B: 0.2, C: 0.3, D: 0.4})
    assert await cache.get_many([A, B, C, D]) == {C: 0.3, D: 0.4}
    assert cache.stats.evictions == 2


async def test_dropping_an_expired_entry_for_room_is_an_expiration(clock: FakeClock):
    cache = RerankCache(ttl_seconds=10, max_entries=1, clock=clock)
    await cache.put_many({A: 0.1})
    clock.now += 11
    await cache.put_many({B: 0.2})
    stats = cache.stats
    assert (stats.evictions, stats.expirations, stats.size) == (0, 1, 1)


@pytest.mark.parametrize(("ttl", "max_entries"), [(0, 10), (-1, 10), (10, 0)])
def test_rejects_nonsense_bounds(ttl: float, max_entries: int):
    with pytest.raises(ValueError):
        RerankCache(ttl_seconds=ttl, max_entries=max_entries)


async def test_default_clock_is_monotonic_time():
    cache = RerankCache(ttl_seconds=60)
    await cache.put_many({A: 0.3})
    assert await cache.get_many([A]) == {A: 0.3}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"backend": "redis"}, "url is required for backend: redis"),
        ({"url": "redis://127.0.0.1:6379/0"}, "only read by backend: redis"),
        ({"backend": "redis", "url": "redis://127.0.0.1:6379/0", "ttl_seconds": 5}, "Extra inputs"),
        ({"backend": "redis", "url": "redis://127.0.0.1:6379/0", "timeout": 0}, "greater than 0"),
    ],
)
def test_rerank_cache_settings_refuse_what_nothing_reads(data: dict, message: str):
    with pytest.raises(ValidationError, match=message):
        RerankCacheSettings.model_validate(data)

"""The query-result cache against real SQLite sources and the Redis server on 127.0.0.1:6379."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid

import pytest

from server.adapters.result_cache import RedisResultCache, ResultCacheSettings, ttl_for
from server.adapters.result_cache_memory import MemoryResultCache
from server.errors import QueryFailed
from server.runtime.build import build_runtime
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
from server.service.answer import answer
from server.templates import Template
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, people_tree, write

QUESTION = "who works in the Engineering department?"


def add_engineer(root, name: str) -> None:
    con = sqlite3.connect(root / "templates" / "people.db")
    con.execute("INSERT INTO people (name, department, salary) VALUES (?, 'Engineering', 1)", (name,))
    con.commit()
    con.close()


async def test_a_repeated_question_is_answered_from_the_cache_until_it_expires(tmp_path):
    config = people_tree(tmp_path, BASE_CONFIG + "result_cache: {default_ttl_seconds: 0.5}\n")
    async with running_runtime(config) as runtime:
        people = runtime.get("people")
        first = await answer(people, QUESTION)
        add_engineer(tmp_path, "Barbara")  # the source changes; a cached answer does not see it
        again = await answer(people, QUESTION)
        assert first.body["metadata"]["from_cache"] is False and again.body["metadata"]["from_cache"] is True
        assert again.body["rows"] == first.body["rows"]
        await asyncio.sleep(0.6)
        fresh = await answer(people, QUESTION)
        assert fresh.body["metadata"]["from_cache"] is False
        assert {"name": "Barbara"} in fresh.body["rows"] and len(fresh.body["rows"]) == len(first.body["rows"]) + 1


async def test_other_parameter_values_are_other_entries(tmp_path):
    async with running_runtime(people_tree(tmp_path)) as runtime:
        people = runtime.get("people")
        await answer(people, QUESTION)
        sales = await answer(people, "who works in the Sales department?")
        assert sales.body["metadata"]["from_cache"] is False
        assert sales.body["metadata"]["parameters"] != (await answer(people, QUESTION)).body["metadata"]["parameters"]


async def test_cache_ttl_zero_and_date_parameters_are_never_cached(tmp_path):
    settings = ResultCacheSettings(default_ttl_seconds=60)
    plain = Template(id="t", description="d", body_key="sql", body="SELECT 1")
    dated = Template.model_validate(
        {
            "id": "d",
            "description": "d",
            "body_key": "sql",
            "body": "SELECT 1",
            "parameters": [{"name": "since", "type": "date"}],
        }
    )
    assert ttl_for(plain, settings) == 60
    assert ttl_for(dated, settings) == 0  # "last 7 days" moves: off unless the template says otherwise
    assert ttl_for(dated.model_copy(update={"cache_ttl_seconds": 5}), settings) == 5
    assert ttl_for(plain.model_copy(update={"cache_ttl_seconds": 0}), settings) == 0
    assert ttl_for(plain, ResultCacheSettings(enabled=False)) == 0


async def test_a_reload_that_changes_the_adapter_empties_its_entries(tmp_path):
    config = people_tree(tmp_path)
    holder = RuntimeHolder(config, close_grace=0.01)
    await holder.start()
    try:
        await answer(holder.current.get("people"), QUESTION)
        assert (await answer(holder.current.get("people"), QUESTION)).body["metadata"]["from_cache"] is True
        add_engineer(tmp_path, "Barbara")
        write(
            config / "adapters" / "people.yaml",
            PEOPLE_ADAPTER.replace("max_rows: 1000", "max_rows: 999")
            if "max_rows: 1000" in PEOPLE_ADAPTER
            else PEOPLE_ADAPTER + "    max_rows: 999\n",
        )
        status = await holder.reload()
        assert status.ok and "people" in status.changes["adapters"]["changed"]
        assert isinstance(holder.result_cache, MemoryResultCache) and len(holder.result_cache) == 0
        after = await answer(holder.current.get("people"), QUESTION)
        assert after.body["metadata"]["from_cache"] is False and {"name": "Barbara"} in after.body["rows"]
    finally:
        await holder.close()


async def test_the_byte_settings_reach_the_cache_and_a_large_answer_is_not_cached(tmp_path):
    """`max_bytes` and `max_entry_share` from config.yaml: with 200 more engineers the Engineering answer
    is over 1% of 64 KiB (655 bytes), so the source answers it every time; Sales' few rows are cached."""
    config = people_tree(tmp_path, BASE_CONFIG + "result_cache: {max_bytes: 65536, max_entry_share: 0.01}\n")
    for i in range(200):
        add_engineer(tmp_path, f"Engineer number {i}")
    async with running_runtime(config) as runtime:
        assert isinstance(runtime.result_cache, MemoryResultCache)
        assert (runtime.result_cache.max_bytes, runtime.result_cache.max_entry_bytes) == (65536, 655)
        people = runtime.get("people")
        for _ in range(2):
            assert (await answer(people, QUESTION)).body["metadata"]["from_cache"] is False
        assert runtime.result_cache.figures().too_large == 2
        sales = "who works in the Sales department?"
        await answer(people, sales)
        assert (await answer(people, sales)).body["metadata"]["from_cache"] is True


async def test_a_failing_query_is_not_cached(tmp_path):
    async with running_runtime(people_tree(tmp_path)) as runtime:
        people = runtime.get("people")
        con = sqlite3.connect(tmp_path / "templates" / "people.db")
        con.execute("ALTER TABLE people RENAME TO staff")
        con.commit()
        with pytest.raises(QueryFailed):
            await answer(people, QUESTION)
        con.execute("ALTER TABLE staff RENAME TO people")
        con.commit()
        con.close()
        ok = await answer(people, QUESTION)
        assert ok.status == "executed" and ok.body["metadata"]["from_cache"] is False


@pytest.mark.needs_redis
async def test_the_redis_backend_is_shared_by_two_runtimes(tmp_path, redis_url):
    prefix = f"ir_test:{uuid.uuid4().hex[:8]}:"
    block = f"result_cache: {{backend: redis, url: '{redis_url}', key_prefix: '{prefix}'}}\n"
    config = people_tree(tmp_path, BASE_CONFIG + block)
    one = await build_runtime(load_config(config))
    two = await build_runtime(load_config(config))  # another process would build the same
    try:
        first = await answer(one.get("people"), QUESTION)
        add_engineer(tmp_path, "Barbara")
        shared = await answer(two.get("people"), QUESTION)
        assert first.body["metadata"]["from_cache"] is False
        assert shared.body["metadata"]["from_cache"] is True and shared.body["rows"] == first.body["rows"]
        assert isinstance(two.result_cache, RedisResultCache)
        await two.result_cache.forget("people")
        assert (await answer(two.get("people"), QUESTION)).body["metadata"]["from_cache"] is False
    finally:
        await one.close()
        await two.close()


@pytest.mark.needs_redis
async def test_redis_forget_drops_only_that_adapters_entries_without_scanning(redis_url):
    """`forget` reads the adapter's own index instead of SCANning the database (a shared Redis may hold
    millions of unrelated keys, and a scan within the 0.5 s timeout would fail and mark the cache down);
    the index drops members whose keys expired and itself expires after the longest entry."""
    import time

    from redis import asyncio as aioredis

    from server.adapters.result_cache import PURGE_BATCH, CachedRows

    prefix = f"ir_test:{uuid.uuid4().hex[:8]}:"
    cache = RedisResultCache(redis_url, prefix, 2.0)
    raw = aioredis.from_url(redis_url)
    rows = CachedRows([{"n": 1}], ["n"], False)
    people = [f"people:{i:040x}" for i in range(PURGE_BATCH + 100)]  # more than one UNLINK's worth
    try:
        await raw.mset({f"{prefix}unrelated:{i}": "x" for i in range(2000)})
        for key in people[:-1]:
            await cache.put(key, rows, 60)
        for i in range(3):
            await cache.put(f"sales:{i:040x}", rows, 30)
        await raw.zadd(f"{prefix}people~index", {"people:gone": time.time() - 60})  # its key expired long ago
        await cache.put(people[-1], rows, 60)  # prunes it
        assert await raw.zcard(f"{prefix}people~index") == len(people)
        assert 55_000 < await raw.pttl(f"{prefix}people~index") <= 65_000
        assert 25_000 < await raw.pttl(f"{prefix}sales~index") <= 35_000
        scans = (await raw.info("commandstats")).get("cmdstat_scan", {}).get("calls", 0)
        await cache.forget("people")
        assert (await raw.info("commandstats")).get("cmdstat_scan", {}).get("calls", 0) == scans
        assert cache.health() == {"status": "ok", "backend": "redis"}
        assert await raw.exists(*(prefix + key for key in people)) == 0
        assert not await raw.exists(f"{prefix}people~index")
        assert (await cache.get(f"sales:{0:040x}")) == rows
        assert await raw.exists(f"{prefix}unrelated:0")
    finally:
        keys = [k async for k in raw.scan_iter(match=prefix + "*", count=1000)]
        await raw.delete(*keys)
        await raw.aclose()
        await cache.close()


async def test_redis_down_is_a_miss_not_an_error(tmp_path):
    block = "result_cache: {backend: redis, url: 'redis://127.0.0.1:1/0', timeout: 0.2}\n"  # nothing listens there
    async with running_runtime(people_tree(tmp_path, BASE_CONFIG + block)) as runtime:
        for _ in range(2):
            result = await answer(runtime.get("people"), QUESTION)
            assert result.status == "executed" and result.body["metadata"]["from_cache"] is False

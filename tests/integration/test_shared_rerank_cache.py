"""The rerank cache in Redis, shared by two replicas (two apps on their own copies of the files): a score
paid for on one is a hit on the other, a template whose text changed is scored again (never its old score),
another reranker model never reads the first one's scores, and a Redis that goes away is a miss, never a
failed request, with /health degraded until Redis is back (found by /health itself, without traffic)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient

from server.rerankers.shared_cache import RerankCacheSettings, SharedRerankCache
from server.testing.anthropic_standin import word_overlap
from server.testing.app import running_app
from server.testing.composite_tree import build_tree, sql_child
from server.testing.configs import BASE_CONFIG
from server.testing.polling import eventually
from server.testing.redis_server import PrivateRedis
from server.testing.rerank_api_standin import RerankApiStandin
from server.testing.servers import free_port

pytestmark = pytest.mark.needs_redis

Q = "who works in the Engineering department?"
OLD_TEXT = 'description: List the people who work in a department\n    nl_examples: ["Who works in Engineering?", '
NEW_DESCRIPTION = "Staff list of one department"
NEW_TEXT = f"description: {NEW_DESCRIPTION}\n    nl_examples: ["

ADAPTERS = (
    "adapters:\n"
    + sql_child("hr", "people.db", "people")
    + sql_child("stock", "inventory.db", "inventory")
    + "  - name: company\n    type: composite\n    child_adapters: [hr, stock]\n    confidence_threshold: 0.3\n"
)


def config(rerank_url: str, redis_url: str, prefix: str) -> str:
    return BASE_CONFIG + (
        f"rerankers:\n  tei: {{provider: rerank_api, api_format: tei, base_url: '{rerank_url}', timeout: 2}}\n"
        "composite_retrieval: {reranking: {enabled: true, provider: tei}}\n"
        f"rerank_cache: {{backend: redis, url: '{redis_url}', key_prefix: '{prefix}', timeout: 0.3}}\n"
    )


async def route(client: TestClient) -> dict[tuple[str, str], float]:
    """(adapter, template) -> rerank score of one test_routing call on `client`."""
    resp = await client.post("/v1/test_routing", json={"query": Q, "adapter": "company"})
    assert resp.status == 200, await resp.text()
    body = await resp.json()
    return {(m["source_adapter"], m["template_id"]): m["rerank_score"] for m in body["all_matches"]}


async def health(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/health")
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


@pytest_asyncio.fixture
async def servers() -> AsyncIterator[tuple[RerankApiStandin, RerankApiStandin]]:
    async with RerankApiStandin() as a, RerankApiStandin() as b:
        yield a, b


async def test_two_replicas_share_scores_per_model_and_template_text(tmp_path: Path, servers, redis_url: str):
    a, b = servers
    text = config(a.base_url, redis_url, f"ir_test:{uuid.uuid4().hex[:8]}:rerank:")
    one, two = build_tree(tmp_path / "one", text, ADAPTERS), build_tree(tmp_path / "two", text, ADAPTERS)
    async with running_app(one) as (c1, h1), running_app(two) as (c2, h2):
        first = await route(c1)
        assert len(a.requests) == 1 and len(first) >= 4
        assert await route(c2) == first and len(a.requests) == 1  # replica two: every score from Redis

        # replica two's template text changes: only that candidate is scored again, with its new text
        library = tmp_path / "two" / "templates" / "people" / "people.yaml"
        assert OLD_TEXT in library.read_text()
        library.write_text(library.read_text().replace(OLD_TEXT, NEW_TEXT))
        assert (await h2.reload()).ok
        after = await route(c2)
        assert len(a.requests) == 2
        [sent] = a.requests[-1].body["texts"]
        assert sent.startswith(NEW_DESCRIPTION)
        changed = ("hr", "people_in_department")
        assert (
            after[changed] == pytest.approx(word_overlap(Q, [sent])[0], abs=1e-4) and after[changed] != first[changed]
        )
        assert {k: v for k, v in after.items() if k != changed} == {k: v for k, v in first.items() if k != changed}
        assert await route(c1) == first and len(a.requests) == 2  # replica one still serves its old text's scores

        # replica one switches to another reranker (another server): nothing of the first one's is reused
        config_file = one / "config.yaml"
        config_file.write_text(config_file.read_text().replace(a.base_url, b.base_url))
        assert (await h1.reload()).ok
        await route(c1)
        assert len(b.requests) == 1 and len(b.requests[0].body["texts"]) == len(first)
        assert len(a.requests) == 2
        assert (await health(c1))["shared"]["rerank_cache"] == {"status": "ok", "backend": "redis"}


async def test_redis_down_is_a_miss_and_health_recovers_by_itself(tmp_path: Path, servers):
    a, _ = servers
    redis = PrivateRedis(free_port()).start()
    try:
        root = build_tree(tmp_path, config(a.base_url, redis.url, "ir_test:rerank:"), ADAPTERS)
        async with running_app(root) as (client, _):
            first = await route(client)
            await route(client)
            assert len(a.requests) == 1

            redis.stop()
            for calls in (2, 3):  # every question is answered, the reranker asked each time
                assert await route(client) == first and len(a.requests) == calls
            state = await health(client)
            assert state["status"] == "degraded"
            assert state["shared"]["rerank_cache"]["status"] == "down"
            assert state["shared"]["rerank_cache"]["reason"].startswith("redis ")

            redis.start()  # empty (no persistence): /health finds it without any question asked
            state = await health(client)
            assert state["status"] == "ok" and state["shared"]["rerank_cache"]["status"] == "ok"
            await route(client)
            await route(client)
            assert len(a.requests) == 4  # one miss on the empty Redis, then hits again
    finally:
        redis.stop()


async def test_redis_keys_expire_and_their_number_is_capped(redis_url: str):
    """A composite's scores in Redis: each key expires after the TTL, the index keeps the newest `max_entries`."""
    shared = SharedRerankCache(
        RerankCacheSettings(backend="redis", url=redis_url, key_prefix=f"ir_test:{uuid.uuid4().hex[:8]}:")
    )
    try:
        capped = shared.for_composite("company", ttl_seconds=30, max_entries=2)
        await capped.put_many({"a": 0.1, "b": 0.2})
        await capped.put_many({"c": 0.3})
        assert await capped.get_many(["a", "b", "c"]) == {"b": 0.2, "c": 0.3}  # the oldest written went first
        assert await shared.link.client.zcard(capped.index) == 2

        short = shared.for_composite("other", ttl_seconds=0.2, max_entries=10)
        await short.put_many({"a": 0.5})
        assert await short.get_many(["a"]) == {"a": 0.5} and await capped.get_many(["a"]) == {}  # composites apart

        async def expired() -> bool:  # Redis expires the key on its own clock (ttl_seconds 0.2)
            return await short.get_many(["a"]) == {}

        await eventually(expired)
        assert shared.health() == {"status": "ok", "backend": "redis"}
    finally:
        await shared.link.client.delete(*await shared.link.client.keys(shared.prefix + "*"))
        await shared.close()

"""The embedding cache shared in Redis (`embedding.cache.shared`): a replica that starts with an empty local
cache file while another replica has warmed Redis embeds nothing for its templates; vectors are kept per
model; Redis down at start or at run time costs local embedding, never a request, shows in /health and
recovers by itself; what a replica embedded during an outage reaches Redis at its next start.

Replicas are apps on their own copies of the files; the embedding model is the loopback OpenAI-compatible
stand-in, so the texts the provider was asked to embed are counted where they arrive."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from server.embedding.cache import CachedEmbedder
from server.runtime.holder import RuntimeHolder
from server.testing.app import running_app
from server.testing.configs import people_tree
from server.testing.embedding_standin import MODEL, EmbeddingStandin
from server.testing.redis_server import PrivateRedis
from server.testing.servers import free_port

pytestmark = pytest.mark.needs_redis

QUESTION = "headcount per department"
EXTRA_TEMPLATE = """
  - id: top_salary
    description: The highest salary anyone earns
    nl_examples: ["what is the top salary?", "highest pay in the company"]
    sql: "SELECT MAX(salary) AS top FROM people"
"""


def config(api_url: str, redis_url: str, prefix: str, model: str = MODEL) -> str:
    return f"""
embedding:
  provider: openai_compatible
  base_url: "{api_url}"
  model: {model}
  cache:
    path: data/embedding_cache.sqlite3
    shared: {{url: "{redis_url}", key_prefix: "{prefix}", timeout: 0.5}}
store: {{backend: memory}}
"""


def embedded(standin: EmbeddingStandin) -> int:
    """Texts the provider has been asked to embed so far."""
    return sum(len(r.body["input"]) if isinstance(r.body["input"], list) else 1 for r in standin.requests)


def cache_of(holder: RuntimeHolder) -> CachedEmbedder:
    [embedder] = holder.current.embedders.values()
    assert isinstance(embedder, CachedEmbedder) and embedder.shared is not None
    return embedder


def rows_in_file(root: Path) -> int:
    con = sqlite3.connect(root / "data" / "embedding_cache.sqlite3")
    try:
        return int(con.execute("SELECT count(*) FROM embeddings").fetchone()[0])
    finally:
        con.close()


async def health(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/health")
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    return body


async def routed(client: TestClient) -> dict[str, Any]:
    resp = await client.post("/v1/test_routing", json={"query": QUESTION, "adapter": "people"})
    assert resp.status == 200, await resp.text()
    decision: dict[str, Any] = (await resp.json())["routing_decision"]
    return decision


async def answered(client: TestClient) -> None:
    resp = await client.post("/v1/query", json={"query": QUESTION, "adapter": "people"})
    assert resp.status == 200, await resp.text()


async def test_a_new_replica_starts_warm_and_models_stay_apart(tmp_path: Path, redis_url: str):
    prefix = f"ir_test:{uuid.uuid4().hex[:8]}:embeddings:"
    async with EmbeddingStandin() as standin:
        text = config(standin.api_url, redis_url, prefix)
        async with running_app(people_tree(tmp_path / "one", text)) as (c1, h1):
            texts = embedded(standin)
            assert texts > 0 and cache_of(h1).stats.computed == texts
            async with running_app(people_tree(tmp_path / "two", text)) as (c2, h2):
                assert embedded(standin) == texts  # replica two embedded nothing: every template vector from Redis
                stats = cache_of(h2).stats
                assert (stats.computed, stats.shared_hits) == (0, texts)
                assert rows_in_file(tmp_path / "two") == texts  # copied into its own file for its next start
                assert await routed(c2) == await routed(c1)
                assert (await health(c2))["shared"]["embedding_cache"] == {"status": "ok", "backend": "redis"}

        other = config(standin.api_url, redis_url, prefix, model=f"{MODEL}-v2")
        async with running_app(people_tree(tmp_path / "three", other)) as (_, h3):
            assert cache_of(h3).stats.computed == texts  # another model reads none of the first one's vectors
            # and the question, once by each replica that routed it (a question is not shared, nor taken
            # from the template vectors: it is one of the templates' examples)
            assert embedded(standin) == 2 * texts + 2


async def test_redis_down_at_start_and_at_run_time_then_the_next_start_publishes(tmp_path: Path):
    redis = PrivateRedis(free_port())  # not started yet: Redis is down when replica one starts
    try:
        async with EmbeddingStandin() as standin:
            text = config(standin.api_url, redis.url, "ir_test:embeddings:")
            one = people_tree(tmp_path / "one", text)
            library = tmp_path / "one" / "templates" / "people" / "people.yaml"
            async with running_app(one) as (client, holder):
                texts = embedded(standin)
                assert texts > 0  # embedded locally
                state = await health(client)
                assert state["status"] == "degraded" and state["shared"]["embedding_cache"]["status"] == "down"
                await answered(client)

                redis.start()  # /health finds it again by itself
                assert (await health(client))["shared"]["embedding_cache"]["status"] == "ok"

                redis.stop()  # down at run time: a reload that adds a template embeds it locally
                library.write_text(library.read_text() + EXTRA_TEMPLATE)
                before = embedded(standin)
                assert (await holder.reload()).ok
                added = embedded(standin) - before
                assert added == 3  # the new template's description and two examples
                await answered(client)
                assert (await health(client))["status"] == "degraded"
                redis.start()
                assert (await health(client))["status"] == "ok"

            # replica one restarts on its warm file: it embeds nothing and publishes what Redis lacks
            async with running_app(one) as (_, again):
                assert cache_of(again).stats.computed == 0
            two = people_tree(tmp_path / "two", text)
            (tmp_path / "two" / "templates" / "people" / "people.yaml").write_text(library.read_text())
            before = embedded(standin)
            async with running_app(two) as (c2, h2):  # a new replica with the same files, after the outages
                stats = cache_of(h2).stats
                assert (stats.computed, stats.shared_hits) == (0, texts + added)
                assert embedded(standin) == before
                await answered(c2)
    finally:
        redis.stop()

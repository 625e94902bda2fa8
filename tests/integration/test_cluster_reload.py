"""Reload propagation between replicas (each its own app, holder and copy of the config dir) over a real
Redis (127.0.0.1:6379, a key prefix of the test's own) and over PostgreSQL LISTEN/NOTIFY (the run's schema)."""

from __future__ import annotations

import asyncio
import shutil
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
import sqlalchemy as sa

from server.runtime.holder import RuntimeHolder
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.loopback import serving
from server.testing.pg import PgDatabase
from server.testing.redis_server import ensure_redis, unique_prefix
from server.web.app import create_app

QUESTION = "what is the boiling point of mercury?"


@asynccontextmanager
async def replicas(roots: list[Path]) -> AsyncIterator[list[aiohttp.ClientSession]]:
    async with AsyncExitStack() as stack:
        sessions = []
        for root in roots:
            holder = RuntimeHolder(root / "config", close_grace=0.1)
            await holder.start()
            stack.push_async_callback(holder.close)
            url = await stack.enter_async_context(serving(create_app(holder)))
            sessions.append(await stack.enter_async_context(aiohttp.ClientSession(base_url=url)))
        yield sessions


async def get(session: aiohttp.ClientSession, path: str) -> dict:
    async with session.get(path) as resp:
        return await resp.json()


async def template_for(session: aiohttp.ClientSession) -> str | None:
    async with session.post("/v1/query", json={"query": QUESTION, "adapter": "people"}) as resp:
        assert resp.status == 200
        return (await resp.json())["metadata"].get("template_id")


async def within(seconds: float, check) -> float:
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, "condition not met in time"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


def add_example(root: Path) -> None:
    library = root / "templates" / "people" / "people.yaml"
    library.write_text(
        library.read_text().replace('"headcount per department"', f'"headcount per department", "{QUESTION}"')
    )


async def check_propagation(tmp_path: Path, cluster_block: str) -> None:
    first = tmp_path / "a"
    people_tree(first, BASE_CONFIG + cluster_block)
    shutil.copytree(first, tmp_path / "b")
    roots = [first, tmp_path / "b"]
    async with replicas(roots) as (a, b):
        hashes = {(await get(s, "/health"))["config_hash"] for s in (a, b)}
        assert len(hashes) == 1

        async def both_listed() -> bool:
            body = await get(a, "/v1/cluster")
            return len(body["replicas"]) == 2

        await within(5, both_listed)
        assert await template_for(b) is None

        for root in roots:  # the same edit reaches both copies; only A is told to reload
            add_example(root)
        async with a.post("/admin/reload") as resp:
            assert resp.status == 200

        async def b_routes() -> bool:
            return await template_for(b) == "headcount_by_department"

        assert await within(2, b_routes) < 2
        health_a, health_b = await get(a, "/health"), await get(b, "/health")
        assert health_a["config_hash"] == health_b["config_hash"] not in hashes
        assert health_b["status"] == "ok" and health_b["cluster"]["problems"] == []
        assert health_b["config"]["last_load"]["trigger"] == "cluster"

        async def listed_together() -> bool:  # heartbeats follow a reload at once
            listing = await get(b, "/v1/cluster")
            return listing["consistent"] is True and listing["config_hashes"] == {health_a["config_hash"]: 2}

        await within(2, listed_together)
        listing = await get(b, "/v1/cluster")
        assert all(r["uptime_seconds"] >= 0 and r["served"] >= 0 for r in listing["replicas"])

        # A's files change again, B's do not: B reloads, finds other files, and says so
        library = first / "templates" / "people" / "people.yaml"
        library.write_text(library.read_text().replace("headcount per department", "staff numbers per department"))
        async with a.post("/admin/reload") as resp:
            assert resp.status == 200

        async def b_degraded() -> bool:
            return (await get(b, "/health"))["status"] == "degraded"

        await within(2, b_degraded)
        problems = (await get(b, "/health"))["cluster"]["problems"]
        assert "config differs from the cluster" in problems[0]
        assert (await get(a, "/health"))["status"] == "ok"

        async def listed_apart() -> bool:
            return (await get(a, "/v1/cluster"))["consistent"] is False

        await within(5, listed_apart)

        # the operator brings B's files in line: B's own reload is announced and everyone agrees again
        shutil.copy(library, tmp_path / "b" / "templates" / "people" / "people.yaml")
        async with b.post("/admin/reload") as resp:
            assert resp.status == 200
        for session in (a, b):
            health = await get(session, "/health")
            assert health["status"] == "ok", health


async def test_reload_reaches_the_other_replica_over_redis(tmp_path):
    url = ensure_redis()
    block = f"cluster: {{enabled: true, redis_url: '{url}', heartbeat_seconds: 0.3, key_prefix: '{unique_prefix()}'}}\n"
    await check_propagation(tmp_path, block)


@pytest.mark.needs_postgres
async def test_reload_reaches_the_other_replica_over_postgres(tmp_path, pg_database: PgDatabase):
    table = f"routing_log_cluster_{uuid.uuid4().hex[:8]}"
    block = (
        f"stats: {{url: '{pg_database.url}', table: {table}}}\n"
        "cluster: {enabled: true, use_routing_log_db: true, heartbeat_seconds: 0.3}\n"
    )
    try:
        await check_propagation(tmp_path, block)
    finally:
        engine = sa.create_engine(pg_database.url)
        with engine.begin() as conn:
            for name in (table, f"{table}_replicas", f"{table}_cluster"):
                conn.execute(sa.text(f'DROP TABLE IF EXISTS "{name}"'))
        engine.dispose()

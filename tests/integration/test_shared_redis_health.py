"""/health asks a shared Redis that was down whether it answers again (`recheck`). A Redis that accepts
connections and never answers must not hold /health (a load balancer's or Kubernetes' probe gives up after
1 s by default and would take every replica out while Redis hangs), nor pile up pings."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server.embedding.shared_cache import SharedEmbeddingCacheSettings, SharedEmbeddings
from server.shared_redis import HEALTH_WAIT, RedisLink

log = logging.getLogger("test")


@asynccontextmanager
async def silent_redis() -> AsyncIterator[tuple[str, list[int]]]:
    """A loopback server that accepts connections, reads what they send and never answers; yields its
    URL and the connections accepted so far."""
    accepted: list[int] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        while await reader.read(4096):
            pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}/0", accepted
    finally:
        server.close()


async def timed_rechecks(engine: RedisLink | SharedEmbeddings, times: int) -> float:
    """The longest of `times` consecutive rechecks, in seconds."""
    longest = 0.0
    for _ in range(times):
        started = time.perf_counter()
        await engine.recheck()
        longest = max(longest, time.perf_counter() - started)
    return longest


async def test_a_hanging_redis_does_not_hold_health_for_the_async_link() -> None:
    async with silent_redis() as (url, accepted):
        link = RedisLink(url, 3.0, "rerank cache", "asking the reranker", log)
        link.failed("read", TimeoutError())
        try:
            assert await timed_rechecks(link, 4) < HEALTH_WAIT + 0.25
            assert link.health()["status"] == "down"
            assert len(accepted) == 1  # one ping at a time, not one per /health
        finally:
            await link.close()


async def test_a_hanging_redis_does_not_hold_health_for_the_embedding_cache() -> None:
    async with silent_redis() as (url, accepted):
        shared = SharedEmbeddings(SharedEmbeddingCacheSettings(url=url, timeout=3.0))
        shared.link.failed("read", TimeoutError())
        try:
            assert await timed_rechecks(shared, 4) < HEALTH_WAIT + 0.25
            assert shared.health()["status"] == "down"
            assert len(accepted) == 1
        finally:
            shared.close()

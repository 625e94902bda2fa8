"""Sessions in Redis, shared by every server process: one key per session with the TTL as its expiry,
and a sorted set of ids by last use that caps their number (least recently used dropped first).

With Redis unreachable no request fails: sessions go on in this process (an in-memory store with the same
limits), the outage is logged once and shown in /health, and Redis is used again as soon as it answers
(a session begun during the outage still continues on this replica)."""

from __future__ import annotations

import logging
import time
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import RedisError

from .memory_store import MemorySessionStore
from .settings import SessionSettings
from .store import SessionStore

log = logging.getLogger("intent_router.sessions")


class RedisSessionStore(SessionStore):
    def __init__(self, settings: SessionSettings) -> None:
        super().__init__(settings)
        assert settings.url is not None
        self._client = aioredis.from_url(
            settings.url, decode_responses=True, socket_timeout=5, socket_connect_timeout=1
        )
        self._index = settings.key_prefix + "~index"
        self._local = MemorySessionStore(settings)  # while Redis is unreachable
        self.unavailable: str | None = None  # why Redis is not answering, while it is not

    def health(self) -> dict[str, Any]:
        if self.unavailable is None:
            return {"status": "ok", "backend": "redis"}
        return {"status": "down", "backend": "redis", "reason": self.unavailable, "local_sessions": len(self._local)}

    def _down(self, exc: BaseException) -> None:
        if self.unavailable is None:
            log.warning("session store (Redis) unreachable (%s); keeping sessions in this process", type(exc).__name__)
        self.unavailable = f"redis: {type(exc).__name__}"

    def _up(self) -> None:
        if self.unavailable is not None:
            log.info("session store (Redis) reachable again")
        self.unavailable = None

    def _redis_key(self, key: str) -> str:
        return self.settings.key_prefix + key

    async def _read(self, key: str) -> str | None:
        try:
            value = await self._client.get(self._redis_key(key))
        except (RedisError, OSError) as exc:
            self._down(exc)
            return await self._local._read(key)
        self._up()
        if isinstance(value, str):
            return value
        return await self._local._read(key)  # begun while Redis was down

    async def _write(self, key: str, text: str) -> None:
        now = time.time()
        ttl_ms = max(1, round(self.settings.ttl_seconds * 1000))
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.set(self._redis_key(key), text, px=ttl_ms)
                pipe.zadd(self._index, {key: now})
                pipe.zremrangebyscore(self._index, "-inf", now - self.settings.ttl_seconds)  # expired ids
                pipe.zcard(self._index)
                results = await pipe.execute()
            excess = int(results[-1]) - self.settings.max_sessions
            if excess > 0:
                dropped: list[Any] = await self._client.zpopmin(self._index, excess)
                if dropped:
                    await self._client.delete(*(self._redis_key(str(pair[0])) for pair in dropped))
        except (RedisError, OSError) as exc:
            self._down(exc)
            await self._local._write(key, text)
            return
        self._up()

    async def close(self) -> None:
        await self._client.aclose()

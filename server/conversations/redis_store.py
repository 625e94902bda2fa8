"""Sessions in Redis, shared by every server process: one key per session with the TTL as its expiry,
and a sorted set of ids by last use that caps their number (least recently used dropped first)."""

from __future__ import annotations

import time
from typing import Any

from redis import asyncio as aioredis
from redis.exceptions import RedisError

from ..errors import IntentRouterError
from .settings import SessionSettings
from .store import SessionStore


class SessionBackendUnavailable(IntentRouterError):
    status = 503
    code = "session_store_unavailable"


class RedisSessionStore(SessionStore):
    def __init__(self, settings: SessionSettings) -> None:
        super().__init__(settings)
        assert settings.url is not None
        self._client = aioredis.from_url(settings.url, decode_responses=True, socket_timeout=5)
        self._index = settings.key_prefix + "~index"

    def _redis_key(self, key: str) -> str:
        return self.settings.key_prefix + key

    async def _read(self, key: str) -> str | None:
        try:
            value = await self._client.get(self._redis_key(key))
        except (RedisError, OSError):
            raise SessionBackendUnavailable("the session store (Redis) is not reachable") from None
        return value if isinstance(value, str) else None

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
        except (RedisError, OSError):
            raise SessionBackendUnavailable("the session store (Redis) is not reachable") from None

    async def close(self) -> None:
        await self._client.aclose()

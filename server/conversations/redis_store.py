"""Sessions in Redis, shared by every server process: one key per session with the TTL as its expiry,
and a sorted set of ids by last use that caps their number (least recently used dropped first).

With Redis unreachable no request fails: sessions go on in this process (an in-memory store with the same
limits), the outage is logged once and shown in /health, and Redis is used again as soon as it answers
(a session begun during the outage still continues on this replica)."""

from __future__ import annotations

import logging
from typing import Any

from ..shared_redis import RedisLink, capped_write
from .memory_store import MemorySessionStore
from .settings import SessionSettings
from .store import SessionStore

log = logging.getLogger("intent_router.sessions")


class RedisSessionStore(SessionStore):
    def __init__(self, settings: SessionSettings) -> None:
        super().__init__(settings)
        self.link = RedisLink(
            settings.redis_url, settings.timeout, "session store", "keeping sessions in this process", log, decode=True
        )
        self._index = settings.key_prefix + "~index"
        self._local = MemorySessionStore(settings)  # while Redis is unreachable

    def health(self) -> dict[str, Any]:
        return self.link.health(local_sessions=len(self._local))

    async def recheck(self) -> None:
        await self.link.recheck()

    def _redis_key(self, key: str) -> str:
        return self.settings.key_prefix + key

    async def _read(self, key: str) -> str | None:
        value = await self.link.attempt("read", lambda r: r.get(self._redis_key(key)))
        if isinstance(value, str):
            return value
        return await self._local._read(key)  # Redis down, or a session begun while it was

    async def _write(self, key: str, text: str) -> None:
        s = self.settings
        written = await self.link.attempt(
            "write", lambda r: capped_write(r, self._index, {key: text}, self._redis_key, s.ttl_seconds, s.max_sessions)
        )
        if not written:
            await self._local._write(key, text)

    async def close(self) -> None:
        await self.link.close()

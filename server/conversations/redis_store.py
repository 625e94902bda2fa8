"""Sessions in Redis, shared by every server process: one key per session with the TTL as its expiry, and per
owner (API key) a sorted set of its session keys by last write, which the quota of owner_quota.py caps (the
same rule as in memory: a key at its own cap loses its least recently written session; at `max_sessions` for
all keys together, the key holding the most does).

Keys: `<prefix><owner>:<id>` per session, `<prefix>~index:<owner>` per owner, `<prefix>~owners` (the owners
with sessions). A write is one script (the session, its index entry, and every owner's count with the expired
entries removed); the evictions the counts call for are a second round trip, only when a cap is passed.

With Redis unreachable no request fails: sessions go on in this process (an in-memory store with the same
limits), the outage is logged once and shown in /health, and Redis is used again as soon as it answers
(a session begun during the outage still continues on this replica)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..owner_quota import evictions
from ..shared_redis import RedisLink
from .memory_store import MemorySessionStore
from .settings import SessionSettings
from .store import SessionStore

if TYPE_CHECKING:
    from redis import asyncio as aioredis

log = logging.getLogger("intent_router.sessions")

# KEYS: the session's key, the owners set. ARGV: state JSON, ttl ms, now, expired-before, owner, index prefix,
# member. Returns [owner, count, owner, count, ...] after the write (expired index entries removed first).
WRITE = """
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local index = ARGV[6] .. ARGV[5]
redis.call('ZADD', index, ARGV[3], ARGV[7])
redis.call('PEXPIRE', index, ARGV[2])
redis.call('SADD', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
local counts = {}
for _, owner in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local other = ARGV[6] .. owner
  redis.call('ZREMRANGEBYSCORE', other, '-inf', ARGV[4])
  local n = redis.call('ZCARD', other)
  if n == 0 then
    redis.call('SREM', KEYS[2], owner)
  else
    table.insert(counts, owner)
    table.insert(counts, n)
  end
end
return counts
"""


class RedisSessionStore(SessionStore):
    def __init__(self, settings: SessionSettings) -> None:
        super().__init__(settings)
        self.link = RedisLink(
            settings.redis_url, settings.timeout, "session store", "keeping sessions in this process", log, decode=True
        )
        self._owners = settings.key_prefix + "~owners"
        self._index_prefix = settings.key_prefix + "~index:"
        self._script = self.link.client.register_script(WRITE)
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

    async def _write(self, owner: str, key: str, text: str) -> None:
        written = await self.link.attempt("write", lambda r: self._capped_write(r, owner, key, text))
        if not written:
            await self._local._write(owner, key, text)

    async def _capped_write(self, client: aioredis.Redis, owner: str, key: str, text: str) -> bool:
        s = self.settings
        now = time.time()
        ttl_ms = max(1, round(s.ttl_seconds * 1000))
        args: list[str | int] = [text, ttl_ms, repr(now), repr(now - s.ttl_seconds), owner, self._index_prefix, key]
        flat: list[Any] = await self._script(keys=[self._redis_key(key), self._owners], args=args, client=client)
        held = {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
        dropping = Counter(e.owner for e in evictions(held, owner, s.quota))
        if dropping:
            async with client.pipeline(transaction=False) as pipe:
                for name, count in dropping.items():
                    pipe.zpopmin(self._index_prefix + name, count)
                popped = await pipe.execute()
            keys = [self._redis_key(str(member)) for pairs in popped for member, _score in pairs]
            if keys:
                await client.delete(*keys)
        return True  # so RedisLink.attempt tells success from no answer

    async def close(self) -> None:
        await self.link.close()

"""Redis as a cache or store shared by several replicas (sessions, result cache, rerank cache, embedding cache).

One recipe for all of them, so each behaves the same when Redis is down or slow: a call that fails or
takes longer than its timeout is reported to the caller as no answer (a miss; the caller falls back to
local state), the outage is logged once when it starts and once when Redis answers again, and `/health`
shows it (`health()`) until a later call, or the health check's own ping (`recheck`), succeeds. For a
second after a failure calls are not even tried, so a host that does not answer at all costs each request
nothing rather than a timeout; and /health waits for its ping only briefly, so it stays fast for probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .api.health import Health

if TYPE_CHECKING:  # imported by the links themselves: a server without Redis never loads the client (~0.2 s)
    import redis
    from redis import asyncio as aioredis

T = TypeVar("T")


def failures() -> tuple[type[BaseException], ...]:
    """What a Redis call raises when Redis is down or slow (asyncio's timeout is TimeoutError since 3.11)."""
    from redis.exceptions import RedisError

    return (RedisError, OSError, TimeoutError)


RECHECK_TIMEOUT = 1.0  # seconds a ping of an engine that is down may take (the async link's)
# seconds /health waits for that ping: a probe's default timeout is 1 s (Kubernetes), and a Redis that hangs
# must not take every replica out; a slower ping goes on in the background and shows at the next /health
HEALTH_WAIT = 0.25
RETRY_AFTER = 1.0  # seconds after a failure during which calls are not tried (a dead host costs no timeouts)


class SharedState(Protocol):
    """What /health asks of a cache or store that may be shared (web/app.py `shared`)."""

    def health(self) -> dict[str, Any] | None:
        """ok / down with the reason; None: in this process, nothing to report."""

    async def recheck(self) -> None:
        """While down, try the engine once more (bounded), so health recovers without traffic."""


class Availability(ABC):
    """Whether one shared Redis user reaches Redis, and why not; logs each change once."""

    def __init__(self, what: str, fallback: str, logger: logging.Logger) -> None:
        self.what = what  # "result cache", "session store", ...
        self.fallback = fallback  # what the replica does meanwhile, for the log line
        self._log = logger
        self.unavailable: str | None = None  # the reason, while Redis does not answer
        self._retry_at = 0.0
        self._ping: asyncio.Future[None] | None = None  # recheck's ping, while one is under way

    def resting(self) -> bool:
        """Just failed: calls answer None at once for RETRY_AFTER seconds instead of each waiting for a
        timeout on a host that does not answer."""
        return self.unavailable is not None and time.monotonic() < self._retry_at

    def failed(self, action: str, exc: BaseException) -> None:
        self._retry_at = time.monotonic() + RETRY_AFTER
        if self.unavailable is None:
            self._log.warning(
                "%s (Redis) unreachable on %s (%s); %s", self.what, action, type(exc).__name__, self.fallback
            )
        self.unavailable = f"redis {action}: {type(exc).__name__}"

    def answered(self) -> None:
        if self.unavailable is not None:
            self._log.info("%s (Redis) reachable again", self.what)
        self.unavailable = None

    def health(self, **extra: Any) -> dict[str, Any]:
        """For /health `shared`: ok, or down with the reason (and what the caller adds)."""
        if self.unavailable is None:
            return {"status": Health.OK, "backend": "redis"}
        return {"status": Health.DOWN, "backend": "redis", "reason": self.unavailable, **extra}

    async def recheck(self) -> None:
        """While down, ping the engine, so /health recovers without waiting for traffic: one ping at a
        time (a hanging Redis does not collect one per /health), waited for at most HEALTH_WAIT."""
        if self.unavailable is None:
            return
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(self._ping_and_note())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._ping), HEALTH_WAIT)

    async def _ping_and_note(self) -> None:
        try:
            await self._ping_once()
        except failures():
            return
        self.answered()

    @abstractmethod
    async def _ping_once(self) -> None:
        """One ping, bounded by its own timeout; raises one of failures() when Redis does not answer."""

    def _stop_ping(self) -> None:
        if self._ping is not None:
            self._ping.cancel()


class RedisLink(Availability):
    """An asyncio Redis client whose every call is bounded by `timeout` and turned into no answer on failure."""

    def __init__(
        self,
        url: str,
        timeout: float,
        what: str,
        fallback: str,
        logger: logging.Logger,
        *,
        connect_timeout: float | None = None,
        decode: bool = False,
    ) -> None:
        super().__init__(what, fallback, logger)
        from redis import asyncio as aioredis

        self.timeout = timeout
        self.client = aioredis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=connect_timeout or timeout,
            decode_responses=decode,
        )

    async def attempt(self, action: str, op: Callable[[aioredis.Redis], Awaitable[T]]) -> T | None:
        """`op`'s result; None when Redis failed or did not answer within the timeout (or just did)."""
        if self.resting():
            return None
        try:
            async with asyncio.timeout(self.timeout):
                result = await op(self.client)
        except failures() as exc:
            self.failed(action, exc)
            return None
        self.answered()
        return result

    async def _ping_once(self) -> None:
        async with asyncio.timeout(min(self.timeout, RECHECK_TIMEOUT)):
            await self.client.ping()

    async def close(self) -> None:
        self._stop_ping()
        await self.client.aclose()


class SyncRedisLink(Availability):
    """The same for callers on worker threads (indexing embeds templates off the event loop)."""

    def __init__(self, url: str, timeout: float, what: str, fallback: str, logger: logging.Logger) -> None:
        super().__init__(what, fallback, logger)
        import redis

        self.timeout = timeout
        self.client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)

    def attempt(self, action: str, op: Callable[[redis.Redis], T]) -> T | None:
        """`op`'s result; None when Redis failed or did not answer within the socket timeout (or just did)."""
        if self.resting():
            return None
        try:
            result = op(self.client)
        except failures() as exc:
            self.failed(action, exc)
            return None
        self.answered()
        return result

    async def _ping_once(self) -> None:
        await asyncio.to_thread(self.client.ping)  # bounded by the socket timeout

    def close(self) -> None:
        self._stop_ping()
        self.client.close()


async def capped_write(
    client: aioredis.Redis,
    index: str,
    entries: Mapping[str, str | bytes],
    key_of: Callable[[str], str],
    ttl_seconds: float,
    max_entries: int,
) -> bool:
    """Write `entries` (member -> value) as keys expiring after `ttl_seconds`, and keep at most `max_entries`
    members in the sorted set `index` (by time of last write): the oldest beyond the cap are deleted.

    Redis bounds what it holds two ways: every key expires by itself, and the index drops expired members
    and caps the count. Returns True (so `RedisLink.attempt` tells success from no answer)."""
    now = time.time()
    ttl_ms = max(1, round(ttl_seconds * 1000))
    async with client.pipeline(transaction=True) as pipe:
        for member, value in entries.items():
            pipe.set(key_of(member), value, px=ttl_ms)
        pipe.zadd(index, dict.fromkeys(entries, now))
        pipe.zremrangebyscore(index, "-inf", now - ttl_seconds)  # members whose keys expired
        pipe.pexpire(index, ttl_ms)  # an index nobody writes any more goes with its keys
        pipe.zcard(index)
        results = await pipe.execute()
    excess = int(results[-1]) - max_entries
    if excess > 0:
        dropped: list[Any] = await client.zpopmin(index, excess)
        if dropped:
            await client.delete(*(key_of(_text(pair[0])) for pair in dropped))
    return True


def _text(member: str | bytes) -> str:
    return member.decode() if isinstance(member, bytes) else member

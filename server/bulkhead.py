"""Bulkheads: each data source gets its own bounded concurrency, and each kind of background work its
own threads, so one slow source (or a burst of statistics requests) cannot stall the others.

Before, query execution, store search, statistics and routing-log writes all went through asyncio's
default thread pool (6 workers on 2 cores): six slow queries on one adapter made every other adapter
wait. Now:
- a data adapter has a `Bulkhead` (`max_concurrency` slots, `queue_timeout` to get one): a request
  that cannot get a slot in time is answered 503 `source_busy` naming the adapter. Adapters that block
  a thread (SQL, DuckDB) run on the bulkhead's own threads, and a slot is held until the thread
  returns, even when the caller stopped waiting (a timed-out query still occupies the source);
- store search and embedding-cache reads run on `SEARCH_POOL`, statistics on `STATISTICS_POOL`,
  routing-log writes on `LOG_POOL`; nothing on the request path uses the default pool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import SourceBusy
from .named_threads import REFIT_NICE, NamedPool

T = TypeVar("T")

SEARCH_POOL = NamedPool(4, thread_name_prefix="router-search")  # blocking store search, cache disk reads
STATISTICS_POOL = NamedPool(2, thread_name_prefix="router-stats")  # /v1/routing/statistics aggregates
LOG_POOL = NamedPool(2, thread_name_prefix="router-log")  # routing-log inserts, purge, schema


# intent-model refits: one at a time, niced, off the event loop and off the pools that serve questions
REFIT_POOL = NamedPool(1, thread_name_prefix="router-refit", nice=REFIT_NICE)
HEALTH_POOL = NamedPool(4, thread_name_prefix="router-health")  # /health pings (a down source blocks one)


async def run_on(pool: concurrent.futures.Executor, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on `pool` (the named replacement for asyncio.to_thread)."""
    return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(fn, *args))


@dataclass
class BulkheadStats:
    admitted: int = 0
    rejected: int = 0  # answered 503 source_busy


class Bulkhead:
    """At most `max_concurrency` queries of one adapter at a time; the rest wait up to `queue_timeout`."""

    def __init__(self, adapter: str, max_concurrency: int, queue_timeout: float) -> None:
        self.adapter = adapter
        self.max_concurrency = max_concurrency
        self.queue_timeout = queue_timeout
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._executor: NamedPool | None = None  # created on first threaded query
        self._running = 0
        self.stats = BulkheadStats()

    async def acquire(self) -> None:
        """Take a slot, or raise SourceBusy after `queue_timeout`."""
        try:  # asyncio.timeout, not wait_for: 3.11's wait_for can swallow the request's own cancellation
            async with asyncio.timeout(self.queue_timeout):
                await self._semaphore.acquire()
        except TimeoutError:
            self.stats.rejected += 1
            raise SourceBusy(self.adapter, self._running, self.queue_timeout) from None
        self._running += 1
        self.stats.admitted += 1

    def release(self) -> None:
        self._running -= 1
        self._semaphore.release()

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """An async query (HTTP, MongoDB, Elasticsearch...) inside one slot."""
        await self.acquire()
        try:
            return await fn()
        finally:
            self.release()

    async def thread(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Wait for a slot, then start `fn(*args)` on this adapter's own threads. The returned future may
        be abandoned (a query timeout): the slot is released only when the thread returns."""
        await self.acquire()
        loop = asyncio.get_running_loop()
        try:
            if self._executor is None:
                self._executor = NamedPool(self.max_concurrency, thread_name_prefix=f"adapter-{self.adapter}"[:40])
            work = self._executor.submit(fn, *args)
        except BaseException:
            self.release()
            raise
        work.add_done_callback(functools.partial(self._released_from_thread, loop))
        return asyncio.wrap_future(work, loop=loop)

    def _released_from_thread(self, loop: asyncio.AbstractEventLoop, _work: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop (shutdown): nobody waits for the slot
            loop.call_soon_threadsafe(self.release)

    async def run_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """`thread` and wait for the result (start, close, health: work that is not timed out)."""
        return await (await self.thread(fn, *args))

    def snapshot(self) -> dict[str, Any]:
        return {
            "max_concurrency": self.max_concurrency,
            "running": self._running,
            "rejected": self.stats.rejected,
        }

    def close(self) -> None:
        """Stop the threads once the queries still running have returned (does not wait)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

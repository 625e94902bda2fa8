"""The result cache in this process, bounded in bytes: answers are kept pickled, so an entry's size is
what it really holds (the pickle, its key and the bookkeeping around them), not a count of entries
whose size nobody knows (6,000 answers of 263 rows held 800 MB as Python objects under the old
10,000-entry bound).

Three rules keep it inside `max_bytes`:
- least recently used entries leave first once the accounted bytes pass the bound;
- an answer larger than `max_entry_bytes` is not cached at all (it would push out everything else);
- expired entries leave without anyone asking for them again: entries of one lifetime expire in the
  order they were written, so a sweep reads only the front of each lifetime's queue (cost: what has
  expired, plus one look per distinct lifetime). A sweep runs before every write and every
  `sweep_seconds` in the background, so an idle server gives its expired answers back too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .result_cache import CachedRows, ResultCache

log = logging.getLogger("intent_router.result_cache")

SWEEP_SECONDS = 10.0  # how often an idle cache looks for expired entries


@dataclass(slots=True)
class _Entry:
    expires: float
    lifetime: float
    blob: bytes  # the pickled (rows, columns, truncated)
    size: int  # accounted bytes: see entry_bytes


ORDERED_SLOT = 96  # bytes per key of an OrderedDict (its dict slot, index and link): 91 measured at 100,000 keys


def _bookkeeping() -> int:
    """Bytes each entry costs besides its pickle and key: the entry object, a float for its expiry
    and its slot in the LRU map and in its lifetime's queue."""
    return sys.getsizeof(_Entry(0.0, 0.0, b"", 0)) + sys.getsizeof(1.5) + 2 * ORDERED_SLOT


BOOKKEEPING = _bookkeeping()


def entry_bytes(key: str, blob: bytes) -> int:
    """What one cached answer holds in memory: its pickle, its key and the bookkeeping around them."""
    return sys.getsizeof(blob) + sys.getsizeof(key) + BOOKKEEPING


@dataclass(frozen=True)
class MemoryCacheFigures:
    entries: int
    bytes: int  # accounted: the sum of entry_bytes
    max_bytes: int
    max_entry_bytes: int
    evicted: int  # dropped for room (bytes or entries)
    expired: int  # dropped because their lifetime passed
    too_large: int  # answers not cached: larger than max_entry_bytes, or not picklable


class MemoryResultCache(ResultCache):
    def __init__(
        self,
        max_bytes: int,
        max_entry_bytes: int,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        sweep_seconds: float = SWEEP_SECONDS,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = min(max_entry_bytes, max_bytes)
        self._max_entries = max_entries
        self._clock = clock
        self._sweep_seconds = sweep_seconds
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._by_lifetime: dict[float, OrderedDict[str, None]] = {}  # lifetime -> keys, first to expire first
        self.bytes = 0
        self._evicted = self._expired = self._too_large = 0
        self._sweeper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def figures(self) -> MemoryCacheFigures:
        return MemoryCacheFigures(
            len(self._entries),
            self.bytes,
            self.max_bytes,
            self.max_entry_bytes,
            self._evicted,
            self._expired,
            self._too_large,
        )

    async def get(self, key: str) -> CachedRows | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires <= self._clock():
            self._drop(key)
            self._expired += 1
            return None
        self._entries.move_to_end(key)
        rows, columns, truncated = pickle.loads(entry.blob)  # pickled by this process: trusted
        return CachedRows(rows, columns, truncated)

    async def put(self, key: str, value: CachedRows, ttl: float) -> None:
        self._start_sweeper()
        self.sweep()
        if key in self._entries:  # a fresh answer replaces the old one, or leaves none if it is not kept
            self._drop(key)
        try:
            blob = pickle.dumps((value.rows, value.columns, value.truncated), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            log.debug("answer not cached: its values do not pickle (%s)", exc)
            self._too_large += 1
            return
        size = entry_bytes(key, blob)
        if size > self.max_entry_bytes:
            self._too_large += 1
            return
        self._entries[key] = _Entry(self._clock() + ttl, ttl, blob, size)
        self._by_lifetime.setdefault(ttl, OrderedDict())[key] = None
        self.bytes += size
        while self.bytes > self.max_bytes or len(self._entries) > self._max_entries:
            self._drop(next(iter(self._entries)))
            self._evicted += 1

    def sweep(self) -> int:
        """Drop every expired entry; reads only each lifetime's front. Returns how many left."""
        now, dropped = self._clock(), 0
        for queue in list(self._by_lifetime.values()):
            while queue:
                key = next(iter(queue))
                if self._entries[key].expires > now:
                    break
                self._drop(key)
                dropped += 1
        self._expired += dropped
        return dropped

    async def forget(self, adapter: str) -> None:
        for key in [k for k in self._entries if k.startswith(f"{adapter}:")]:
            self._drop(key)

    async def close(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            if sweeper.get_loop() is asyncio.get_running_loop():  # a task of another loop cannot be awaited
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        queue = self._by_lifetime[entry.lifetime]
        del queue[key]
        if not queue:
            del self._by_lifetime[entry.lifetime]
        self.bytes -= entry.size

    def _start_sweeper(self) -> None:
        """The background sweep, started with the first write (a cache is built before the event loop runs)."""
        loop = asyncio.get_running_loop()
        if self._sweeper is None or self._sweeper.done() or self._sweeper.get_loop() is not loop:
            self._sweeper = loop.create_task(self._sweep_forever())

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self._sweep_seconds)
            self.sweep()

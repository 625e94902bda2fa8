"""Sessions in this process: an LRU of at most `max_sessions` entries, each forgotten after `ttl_seconds`."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from .settings import SessionSettings
from .store import SessionStore


class MemorySessionStore(SessionStore):
    def __init__(self, settings: SessionSettings, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(settings)
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()  # id -> (expires at, state JSON)

    def __len__(self) -> int:
        return len(self._entries)

    async def _read(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry[1]

    async def _write(self, key: str, text: str) -> None:
        self._entries[key] = (self._clock() + self.settings.ttl_seconds, text)
        self._entries.move_to_end(key)
        self._evict()

    def _evict(self) -> None:
        now = self._clock()
        while self._entries:  # expired ones at the cold end first, then the least recently used beyond the cap
            oldest_id, (expires, _) = next(iter(self._entries.items()))
            if expires > now and len(self._entries) <= self.settings.max_sessions:
                break
            del self._entries[oldest_id]

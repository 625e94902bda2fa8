"""Sessions in this process: each forgotten after `ttl_seconds` untouched, and within the per-owner and total caps
(owner_quota.py: a key at its cap loses its own least recently used session; when all keys together are at
`max_sessions`, the key holding the most does)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from ..owner_quota import evictions
from .settings import SessionSettings
from .store import SessionStore

Entry = tuple[float, str]  # (expires at, state JSON)


class MemorySessionStore(SessionStore):
    def __init__(self, settings: SessionSettings, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(settings)
        self._clock = clock
        # per owner, its sessions from least to most recently used; `_owner_of` finds a key's owner
        self._owners: dict[str, OrderedDict[str, Entry]] = {}
        self._owner_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._owner_of)

    def held(self) -> dict[str, int]:
        """Sessions per owner (expired ones included until they are next looked at)."""
        return {owner: len(entries) for owner, entries in self._owners.items()}

    async def _read(self, key: str) -> str | None:
        owner = self._owner_of.get(key)
        if owner is None:
            return None
        entries = self._owners[owner]
        expires, text = entries[key]
        if expires <= self._clock():
            self._drop(owner, key)
            return None
        entries.move_to_end(key)
        return text

    async def _write(self, owner: str, key: str, text: str) -> None:
        previous = self._owner_of.get(key)
        if previous is not None and previous != owner:  # keys embed their owner: cannot happen, but stay consistent
            self._drop(previous, key)
        entries = self._owners.setdefault(owner, OrderedDict())
        entries[key] = (self._clock() + self.settings.ttl_seconds, text)
        entries.move_to_end(key)
        self._owner_of[key] = owner
        self._evict(owner)

    def _evict(self, owner: str) -> None:
        """Expired sessions first, then whatever the quota says must go (each owner's least recently used)."""
        now = self._clock()
        for name in list(self._owners):
            entries = self._owners[name]
            while entries:
                oldest, (expires, _) = next(iter(entries.items()))
                if expires > now:
                    break
                self._drop(name, oldest)
        for eviction in evictions(self.held(), owner, self.settings.quota):
            entries = self._owners[eviction.owner]
            self._drop(eviction.owner, next(iter(entries)))

    def _drop(self, owner: str, key: str) -> None:
        entries = self._owners[owner]
        del entries[key]
        del self._owner_of[key]
        if not entries:
            del self._owners[owner]

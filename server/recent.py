"""The last few values by key, least recently used out first: the one in-memory LRU behind the caches
of recent vectors, pooled token views and fitted models. Thread-safe: the event loop and worker threads
share some of them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: K) -> V | None:
        return self.get_many((key,)).get(key)

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The values kept of these keys (each now the most recently used); absent keys are left out."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                value = self._values.get(key)
                if value is not None:
                    self._values.move_to_end(key)
                    found[key] = value
        return found

    def put(self, key: K, value: V) -> None:
        self.put_many(((key, value),))

    def put_many(self, items: Iterable[tuple[K, V]]) -> None:
        """Keep these values (the most recently used), dropping the least recently used beyond `size`."""
        with self._lock:
            for key, value in items:
                self._values[key] = value
                self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)

"""The last few values by key, least recently used out first: the one in-memory LRU behind the caches
of recent vectors, pooled token views and fitted models. Bounded by a count of entries and, when the
caller says what an entry weighs, by bytes too (entries of different sizes: vectors of different
models). Thread-safe: the event loop and worker threads share some of them."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

ORDERED_SLOT = 96  # bytes per key of an OrderedDict (its dict slot, index and link): 91 measured at 100,000 keys


def slot_bytes(key: object) -> int:
    """What a key and its slot in an OrderedDict hold, besides the value."""
    return sys.getsizeof(key) + ORDERED_SLOT


class Recent(Generic[K, V]):
    def __init__(self, size: int, max_bytes: int | None = None, weigh: Callable[[K, V], int] | None = None) -> None:
        """`weigh(key, value)`: the bytes an entry holds, the same for the same entry every time it is asked
        (it is asked again when the entry leaves); needed with `max_bytes`."""
        if max_bytes is not None and weigh is None:
            raise ValueError("a byte bound needs a weigh function")
        self.size = size
        self.max_bytes = max_bytes
        self._weigh = weigh
        self.bytes = 0  # the accounted bytes of the entries kept (0 without weigh)
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is kept (without making it the most recently used)."""
        return key in self._values

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self.bytes = 0

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
        """Keep these values (the most recently used), dropping the least recently used beyond `size`
        entries or `max_bytes`."""
        weigh = self._weigh
        with self._lock:
            for key, value in items:
                if weigh is not None:
                    old = self._values.get(key)
                    self.bytes += weigh(key, value) - (weigh(key, old) if old is not None else 0)
                self._values[key] = value
                self._values.move_to_end(key)
            while len(self._values) > self.size or (self.max_bytes is not None and self.bytes > self.max_bytes):
                key, value = self._values.popitem(last=False)
                if weigh is not None:
                    self.bytes -= weigh(key, value)

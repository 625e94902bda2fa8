"""Fitted intent models by the fingerprint of what they were fitted on, owned by the runtime holder.

A fit costs seconds for hundreds of templates; another composite over the same children, or a reload
that did not touch them, reuses the model instead. Small: each model holds its examples' vectors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from .acceptance import Acceptance
    from .intent_model import IntentModel

T = TypeVar("T")


class _Recent(Generic[T]):
    """The last few values by key (least recently used out first)."""

    def __init__(self, size: int) -> None:
        self._values: OrderedDict[str, T] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key: str) -> T | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
            return value

    def put(self, key: str, value: T) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self._size:
                self._values.popitem(last=False)


class FittedModels:
    """Intent models and the acceptance tests fitted on them."""

    def __init__(self, size: int = 4) -> None:
        self._models: _Recent[IntentModel] = _Recent(size)
        self._acceptance: _Recent[Acceptance] = _Recent(size)

    def get(self, key: str) -> IntentModel | None:
        return self._models.get(key)

    def put(self, key: str, model: IntentModel) -> None:
        self._models.put(key, model)

    def get_acceptance(self, key: str) -> Acceptance | None:
        return self._acceptance.get(key)

    def put_acceptance(self, key: str, acceptance: Acceptance) -> None:
        self._acceptance.put(key, acceptance)

"""settle(): the survivors are frozen out of the collector's sight, and the next settle collects what
was frozen and has become garbage since (a replaced runtime's cycles)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from server.runtime.heap import settle


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector can free it


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test session sees the collector as usual


def test_settle_freezes_what_survives_and_the_next_settle_collects_it_once_garbage():
    node = Node()
    alive = weakref.ref(node)
    first = settle()
    assert first.frozen == gc.get_freeze_count() > 0
    del node
    gc.collect()
    assert alive() is not None  # frozen: a full collection does not look at it
    second = settle()
    assert alive() is None  # unfrozen, collected
    assert second.collected >= 1

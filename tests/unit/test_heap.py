"""settle(): the survivors are frozen out of the collector's sight, and the next settle collects what
was frozen and has become garbage since (a replaced runtime's cycles)."""

from __future__ import annotations

import gc
import sys
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


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; malloc_trim is glibc's")
def test_settle_gives_freed_heap_pages_back():
    """Blocks freed in the middle of the heap (a survivor every 16 blocks keeps the heap from shrinking at its
    top) stay resident until settle hands their pages back: what a start's disk reads and copies leave."""
    blocks = [bytes(1536) + bytes([i % 256]) for i in range(64_000)]  # ~100 MB of malloc'd (not pooled) blocks
    survivors = blocks[::16]
    del blocks
    before = _rss_mb()
    settled = settle()
    if not settled.trimmed:
        pytest.skip("this C library has no malloc_trim")
    assert before - _rss_mb() > 50, "the freed blocks' pages stayed resident"
    assert len(survivors) == 4000

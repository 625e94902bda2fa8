"""settle(): the survivors are frozen out of the collector's sight, and the next settle collects what
was frozen and has become garbage since (a replaced runtime's cycles)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.runtime.heap import pin_mmap_threshold, settle

REPO = Path(__file__).resolve().parents[2]


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
    # Other tests' threads may still free a few frozen objects meanwhile: the count only falls after a freeze.
    assert 0 < gc.get_freeze_count() <= first.frozen
    assert gc.get_freeze_count() > first.frozen * 0.99
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


HEAP_GROWTH = """
import sys
import numpy as np
from server.runtime.heap import pin_mmap_threshold

def heap_bytes():
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            return hi - lo
    return 0

if sys.argv[1] == "pin":
    assert pin_mmap_threshold()
big = np.ones(4 << 17)  # 4 MB, then freed: glibc's own threshold rises above it
del big
before = heap_bytes()
block = np.ones(2 << 17)  # 2 MB
print(heap_bytes() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap, read from /proc/self/maps")
def test_a_pinned_mmap_threshold_keeps_large_arrays_out_of_the_heap():
    """Without the pin, a 2 MB array allocated after a 4 MB one was freed grows the heap (glibc raised its
    threshold), where freed pages can stay resident; with it, the array is mapped on its own."""
    grown = {
        mode: int(
            subprocess.run(
                [sys.executable, "-c", HEAP_GROWTH, mode], capture_output=True, text=True, check=True, cwd=REPO
            ).stdout
        )
        for mode in ("default", "pin")
    }
    assert grown["pin"] == 0
    assert grown["default"] >= 1 << 20  # most of the 2 MB (the heap may have had some room)


def test_an_operators_mmap_threshold_is_kept(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert pin_mmap_threshold() is False

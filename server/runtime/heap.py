"""The cyclic garbage collector's cost on our long-lived heap, handled in one place.

A server's heap is mostly what its start built and keeps for good: the model, the template stores,
the intent model's vocabularies, the caches. Every full (oldest-generation) collection walks all of
it to find nothing, holding the GIL: on the demo about 0.1-0.25 s, once every thousand questions or
so, during which the event loop answers nobody. `settle` collects once and then freezes the
survivors (`gc.freeze`), so later collections only walk what requests and reloads allocate.

Frozen objects are never collected, so a replaced runtime's cycles would stay; `settle` unfreezes
first and is called again when a replaced runtime has been closed (`RuntimeHolder.retired_listeners`),
which collects it.

Both moments follow a burst of freed memory (a start's transient arrays and disk reads, a replaced
runtime's stores and models). glibc keeps freed blocks in the middle of its heaps resident: at 1,000
templates that was ~30 MB (1.6 KB per example) after start. `settle` hands those pages back to the system
(`malloc_trim`; elsewhere nothing to do).

Large arrays go straight to the system (`pin_mmap_threshold`, at process start): glibc otherwise raises its
mmap threshold each time a large block is freed, up to 32 MB, after which such blocks come from its heaps,
and what is freed there stays resident wherever a live block shares the pages. At 1,000 templates the RSS
after start then moved between 583 and 620 MB from one start of the same code to the next (which
arrays a start's threads freed first); with the threshold pinned at 1 MB it was 562.2-562.6 MB.

fit-thresholds instead turns the collector off while it routes a chunk of questions (`no_cyclic_gc`):
a chunk allocates thousands of short-lived objects that reference counting frees anyway.
"""

from __future__ import annotations

import ctypes
import gc
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..libc import libc_function

SETTLE_AFTER_START = 5.0  # seconds after listening: the held-back starts (server/start_gate.py) have loaded by then
# blocks of this size and larger are mapped on their own and unmapped when freed (glibc's default starts at
# 128 KB and grows with every large block freed); a request's temporaries stay below it, in the heaps
MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


@dataclass(frozen=True)
class Settled:
    seconds: float
    collected: int  # unreachable objects found
    frozen: int  # objects now out of the collector's sight
    trimmed: bool  # freed heap pages were handed back to the system (False: the C library cannot)


def settle() -> Settled:
    """Collect everything (frozen objects included), freeze what survives, and give the freed pages back."""
    started = time.perf_counter()
    gc.unfreeze()
    collected = gc.collect()
    gc.freeze()
    trimmed = release_freed_memory()
    return Settled(time.perf_counter() - started, collected, gc.get_freeze_count(), trimmed)


def pin_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `size` (which also stops it from growing); False with another C library,
    or when the operator set MALLOC_MMAP_THRESHOLD_ (theirs stays)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    mallopt = libc_function("mallopt", (ctypes.c_int, ctypes.c_int), ctypes.c_int)
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, size))


def release_freed_memory() -> bool:
    """Return the free pages of every malloc arena to the system (the call drops the GIL while it walks
    them); False when the C library has no malloc_trim."""
    trim = libc_function("malloc_trim", (ctypes.c_size_t,), ctypes.c_int)
    if trim is None:
        return False
    trim(0)
    return True


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic collector off while a chunk is routed (back on after, so any cycle is collected then):
    routing 128 questions allocates some 10,000 short-lived objects (candidates, hits, tuples), freed by
    reference counting, which set off collections that scan every object of the runtime; they were a
    quarter of the routing's CPU time."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()

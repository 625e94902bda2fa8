"""A long-lived heap kept out of the cyclic garbage collector's sight.

A server's heap is mostly what its start built and keeps for good: the model, the template stores,
the intent model's vocabularies, the caches. Every full (oldest-generation) collection walks all of
it to find nothing, holding the GIL: on the demo about 0.1-0.25 s, once every thousand questions or
so, during which the event loop answers nobody. `settle` collects once and then freezes the
survivors (`gc.freeze`), so later collections only walk what requests and reloads allocate.

Frozen objects are never collected, so a replaced runtime's cycles would stay; `settle` unfreezes
first and is called again when a replaced runtime has been closed (`RuntimeHolder.retired_listeners`),
which collects it.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

SETTLE_AFTER_START = 5.0  # seconds after listening: the MCP SDK loads in the background then


@dataclass(frozen=True)
class Settled:
    seconds: float
    collected: int  # unreachable objects found
    frozen: int  # objects now out of the collector's sight


def settle() -> Settled:
    """Collect everything (frozen objects included), then freeze what survives."""
    started = time.perf_counter()
    gc.unfreeze()
    collected = gc.collect()
    gc.freeze()
    return Settled(time.perf_counter() - started, collected, gc.get_freeze_count())

"""Where a search runs: in place on the event loop, or on the search pool's threads.

A search of an in-memory store is arithmetic that no await interrupts: on the loop it delays every other
request for its whole duration (issue 34: at 5,000 templates search was 60% of the loop's samples under 8
clients). A hop to a thread costs the loop about 0.02 ms and the question about 0.035 ms of wall time
(measured on 2 cores), and a search over ~2,000 vectors of dimension 384 about 0.09 ms: below that a search
stays in place (small deployments keep their latency), above it, or when the stores must pack a changed
view first, it runs on `SEARCH_POOL` (numpy and onnxruntime release the GIL for the products).
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import TemplateStore
from .memory import MemoryTemplateStore

# floats read per question (vectors x dimension, summed over the stores searched together) above which a
# search leaves the event loop
OFF_LOOP_ABOVE_FLOATS = 2048 * 384


def search_floats(stores: Iterable[TemplateStore]) -> int:
    """Floats one question's search reads in these stores (in-memory ones; others are searched elsewhere)."""
    return sum(s.search_floats() for s in stores if isinstance(s, MemoryTemplateStore))


def searches_off_loop(
    stores: Iterable[TemplateStore], questions: int = 1, limit: int | None = None, built: bool | None = None
) -> bool:
    """True when searching these stores for `questions` questions costs more than a thread hop (`limit`
    floats, default OFF_LOOP_ABOVE_FLOATS), or when what the search reads must be built first (packing and
    quantising are milliseconds). `built`: whether it is (default: every store's own view is)."""
    memory = [s for s in stores if isinstance(s, MemoryTemplateStore)]
    limit = OFF_LOOP_ABOVE_FLOATS if limit is None else limit
    if built is None:
        built = all(s.ready for s in memory)
    return not built or search_floats(memory) * questions > limit

"""Where a search runs: in place on the event loop, or on the search pool's threads.

A search of an in-memory store is arithmetic that no await interrupts: on the loop it delays every other
request for its whole duration (issue 34: at 5,000 templates search was 60% of the loop's samples under 8
clients). A hop to a thread costs the loop about 0.02 ms and the question 0.035 ms of wall time on a quiet
machine, 0.15-0.2 ms on a busy one (measured on 2 cores: at 150 templates x 100 examples the search stage
went from 1.39x to 1.53-1.62x the bare product). So a lone question's search stays in place up to about
16,000 vectors of dimension 384 (0.35 ms with the int8 pass); a batch of concurrent questions, a larger
store, or stores that must pack a changed view first (milliseconds) search on `SEARCH_POOL` (numpy and
onnxruntime release the GIL for the products).
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import TemplateStore
from .memory import MemoryTemplateStore

# floats read (vectors x dimension, summed over the stores searched together, times the questions searched
# in one call) above which a search leaves the event loop
OFF_LOOP_ABOVE_FLOATS = 16_384 * 384


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

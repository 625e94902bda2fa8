"""A composite's concurrent questions, routed together once their vectors are in.

The questions of one encoder batch reach the router in the same turn of the event loop. Each step after
the encoder (the stacked search, then each scoring stage) used to be a hand-over of its own: a job on a
thread, then the loop again. On short cores every hand-over waits for a core the encoder holds (issue 34:
under 8 clients at 1,000 templates the search and the intent stage each took 6-8 ms of wall time for about
1 ms of CPU). Here they run as ONE job per batch: the search, the candidates and every local stage's
arithmetic (`Router.route_batch`), so a question waits for a core once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..coalescing import Coalescer


class BatchRouter(Protocol):
    """What routes a batch (routing/router.py's Router)."""

    def batch_key(self) -> tuple[int, ...]:
        """Identifies what the router routes with (its search and stages): equal keys may share a batch."""
        ...

    async def route_batch(self, batch: Sequence[Asked]) -> list[Any]:
        """Each question's routing outcome, in order."""
        ...


@dataclass
class Asked:
    """A question whose vector is in, waiting for the rest of its routing."""

    router: BatchRouter
    question: str
    sources: Sequence[Any]  # the router's TemplateSources
    vector: np.ndarray
    timings: dict[str, float]
    started: float  # when its routing began (perf_counter)
    submitted: float  # when it joined the batch


class RoutingBatches:
    """A composite's batches (it owns one, as it owns its GroupSearch): the questions of one loop turn that
    share sources and stages are routed by one `Router.route_batch`."""

    def __init__(self) -> None:
        self.requests: Coalescer[Asked, Any] = Coalescer("routing", self._route_many)

    async def route(self, asked: Asked) -> Any:
        """`asked`'s routing outcome, from the batch of its loop turn."""
        return await self.requests.submit(asked)

    async def _route_many(self, items: list[Asked]) -> list[Any]:
        alike: dict[tuple[int, ...], list[int]] = {}  # a reload meanwhile brings other sources and stages
        for i, asked in enumerate(items):
            alike.setdefault((*asked.router.batch_key(), *map(id, asked.sources)), []).append(i)
        out: list[Any] = [None] * len(items)
        for members in alike.values():
            batch = [items[i] for i in members]
            for i, outcome in zip(members, await batch[0].router.route_batch(batch), strict=True):
                out[i] = outcome
        return out

"""Concurrent requests' calls answered by one batched call: what the encoder's micro-batching does for
the forward pass, done for the work after it: the stacked template search (GroupSearch.search_request)
and a scoring stage whose arithmetic batches (the intent model). On the demo at 16 clients the shared
search took about 0.2 ms of event-loop CPU per question off the routing path (the loop's CPU is what the
encoder loses: both share two cores).

Questions whose embeddings come back in one encoder batch reach the next steps in the same turn of
the event loop; doing them one by one pays each step's fixed cost (dozens of small numpy calls) once
per question, in the thread that also serves HTTP. Here every call made within one turn of the loop
joins the same batched call, started in the next turn. Nothing waits on purpose: a lone call is
answered a few loop turns (microseconds) later than it would have been.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .embedding.batching import BatchStats

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass
class _Waiting(Generic[Item, Result]):
    item: Item
    future: asyncio.Future[Result]


@dataclass
class Coalescer(Generic[Item, Result]):
    """`submit(item)`, answered from a `run_many(items)` shared with the calls of the same loop turn. Calls
    from different event loops (threads) never share a batch: each loop batches its own."""

    name: str
    run_many: Callable[[list[Item]], Awaitable[list[Result]]]
    stats: BatchStats = field(default_factory=BatchStats)
    _waiting: dict[asyncio.AbstractEventLoop, list[_Waiting[Item, Result]]] = field(default_factory=dict)

    async def submit(self, item: Item) -> Result:
        loop = asyncio.get_running_loop()
        waiting: _Waiting[Item, Result] = _Waiting(item, loop.create_future())
        batch = self._waiting.get(loop)
        if batch is None:
            batch = self._waiting[loop] = []
            loop.call_soon(self._start, loop)
        batch.append(waiting)
        return await waiting.future

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._waiting.pop(loop, [])
        loop.create_task(self._run(batch), name=f"coalesced-{self.name}")

    async def _run(self, batch: list[_Waiting[Item, Result]]) -> None:
        self.stats.record(len(batch))
        try:
            results = await self.run_many([w.item for w in batch])
        except asyncio.CancelledError:  # shutting down
            for w in batch:
                w.future.cancel()
            raise
        except Exception as exc:  # each caller sees what its own call would have raised
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
            return
        for w, result in zip(batch, results, strict=True):
            if not w.future.done():  # its request may have been cancelled (client gone, timeout)
                w.future.set_result(result)

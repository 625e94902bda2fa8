"""Micro-batching of questions: those that arrive while the encoder is busy go into its next call.

One forward pass over 16 short questions costs far less than 16 passes of one (the encoder's fixed
cost per call dominates a short text), so under concurrency a queue of waiting questions is drained
in batches of at most `max_batch`. Nothing waits on purpose: an idle encoder takes the first
question at once, and a question never waits longer than the call in progress plus the calls for
the questions queued before it (`max_batch` bounds each call).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np


@dataclass
class BatchStats:
    """Batched calls made for questions (the encoder's, a stage's) and how many questions they carried."""

    calls: int = 0
    questions: int = 0
    largest: int = 0

    def record(self, questions: int) -> None:
        self.calls += 1
        self.questions += questions
        self.largest = max(self.largest, questions)

    @property
    def mean_batch(self) -> float:
        return self.questions / self.calls if self.calls else 0.0


@dataclass
class _Pending:
    text: str
    future: Future[np.ndarray] | asyncio.Future[np.ndarray]
    loop: asyncio.AbstractEventLoop | None = None  # an asyncio future's loop: resolved there

    def wanted(self) -> bool:
        if self.loop is None:
            assert isinstance(self.future, Future)
            return self.future.set_running_or_notify_cancel()
        return not self.future.cancelled()  # read from the encoder's thread: at worst one vector too many


class QuestionBatcher:
    """Queues questions and drains them on `executor` with `encode(texts) -> (len(texts), dim)`."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], executor: Executor, max_batch: int = 16) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._encode = encode
        self._executor = executor
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._draining = False

    def submit(self, text: str) -> Future[np.ndarray]:
        """The question's vector, as a future; the first question of an idle queue starts a drain."""
        future: Future[np.ndarray] = Future()
        self._queue(_Pending(text, future))
        return future

    async def embed(self, text: str) -> np.ndarray:
        """`submit` for a coroutine: the batch's vectors come back to the event loop in one call (not one
        wake-up of the loop, and one hand-over of the GIL by the encoder's thread, per question)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[np.ndarray] = loop.create_future()
        self._queue(_Pending(text, future, loop))
        return await future

    def _queue(self, pending: _Pending) -> None:
        with self._lock:
            self._pending.append(pending)
            start, self._draining = not self._draining, True
        if start:
            try:
                self._executor.submit(self._drain)
            except BaseException as exc:  # executor shut down: fail what is queued, not hang it
                self._fail_pending(exc)

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
                if not batch:
                    self._draining = False
                    return
            live = [p for p in batch if p.wanted()]
            if not live:
                continue
            try:
                vectors = self._encode([p.text for p in live])
            except BaseException as exc:
                _deliver([(p, exc) for p in live])
                continue
            self.stats.record(len(live))
            # a copy each: a view would keep the whole batch alive in caches
            _deliver([(p, vectors[row].copy()) for row, p in enumerate(live)])

    def _fail_pending(self, exc: BaseException) -> None:
        with self._lock:
            batch, self._pending, self._draining = self._pending, [], False
        _deliver([(p, exc) for p in batch if p.wanted()])


def _deliver(outcomes: list[tuple[_Pending, np.ndarray | BaseException]]) -> None:
    """Results to their futures: concurrent ones here, asyncio ones on their loop, one call per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, np.ndarray | BaseException]]] = {}
    for pending, outcome in outcomes:
        if pending.loop is None:
            assert isinstance(pending.future, Future)
            _settle(pending.future, outcome)
        else:
            assert isinstance(pending.future, asyncio.Future)
            by_loop.setdefault(pending.loop, []).append((pending.future, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle_all, settled)


def _settle_all(settled: list[tuple[asyncio.Future, np.ndarray | BaseException]]) -> None:
    for future, outcome in settled:
        if not future.done():
            _settle(future, outcome)


def _settle(future: Future | asyncio.Future, outcome: np.ndarray | BaseException) -> None:
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)

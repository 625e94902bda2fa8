"""Micro-batching of questions: those that arrive while the encoder is busy go into its next call.

One forward pass over 16 short questions costs far less than 16 passes of one (the encoder's fixed
cost per call dominates a short text), so under concurrency a queue of waiting questions is drained
in batches of at most `max_batch`. Nothing waits on purpose: an idle encoder takes the first
question at once, and a question never waits longer than the call in progress plus the calls for
the questions queued before it (`max_batch` bounds each call).

With lanes (embedding/lanes.py), a lone question still runs on the wide runner (every core), while
questions that queue up are shared out over the free lanes, each a one-core pass of its own, in passes
of at least `lane_floor` questions (`server.encoder_lane_min_questions`; the last may hold fewer); while
a pass runs, fewer waiting questions wait for a runner to finish. Every pass reads all the model's
weights (~90 MB) and costs about as much again as two short questions, so where the routing after the
encoder already takes a core, passes of one or two questions side by side cost more than they save
(docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

import numpy as np


@dataclass
class BatchStats:
    """Batched calls made for questions (the encoder's, a stage's) and how many questions they carried."""

    calls: int = 0
    questions: int = 0
    largest: int = 0
    lane_calls: int = 0  # of `calls`, those run on a lane

    def record(self, questions: int, lane: bool = False) -> None:
        self.calls += 1
        self.lane_calls += lane
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


@dataclass(frozen=True, eq=False)  # compared and hashed by identity
class Lane:
    """A way to run a forward pass over questions: `encode(texts) -> (len(texts), dim)` on `executor`."""

    encode: Callable[[list[str]], np.ndarray]
    executor: Executor


class QuestionBatcher:
    """Queues questions and drains them with `encode` on `executor` (the wide runner) or, once some are
    given (`set_lanes`), over the lanes as well."""

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        executor: Executor,
        max_batch: int = 16,
        lanes: Sequence[Lane] = (),
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._wide = Lane(encode, executor)
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._lanes: list[Lane] = list(lanes)
        self._lane_floor = 1
        self._busy: set[Lane] = set()  # the runners (lanes, the wide one) running a pass

    @property
    def lanes(self) -> int:
        return len(self._lanes)

    @property
    def lane_floor(self) -> int:
        return self._lane_floor

    def set_lanes(self, lanes: Sequence[Lane], lane_floor: int = 1) -> None:
        """Use these lanes from the next pass on (a dropped lane finishes the pass it runs), sharing the queue
        out in passes of at least `lane_floor` questions (see `_plan`)."""
        if lane_floor < 1:
            raise ValueError("lane_floor must be at least 1")
        with self._lock:
            self._lanes = list(lanes)
            self._lane_floor = lane_floor
            starts = self._plan()
        self._start(starts)

    def submit(self, text: str) -> Future[np.ndarray]:
        """The question's vector, as a future; the first question of an idle queue starts a pass."""
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
            starts = self._plan()
        self._start(starts)

    def _plan(self) -> list[tuple[Lane, list[_Pending]]]:
        """(Under the lock.) The passes to start now: nothing while the wide runner runs (it has every
        core); a lone question with nothing running goes to the wide runner, as does everything without
        lanes; otherwise the queue is shared out evenly over the free lanes, in passes of at least `lane_floor`
        (the last may hold fewer), and held for a runner to finish while it is shorter than `lane_floor`
        beside a running pass."""
        if not self._pending or self._wide in self._busy:
            return []
        if not self._lanes or (not self._busy and len(self._pending) == 1):
            if self._busy:  # lanes still finishing (set_lanes dropped them): the wide runner waits for them
                return []
            return [self._claim(self._wide, self.max_batch)]
        free = [lane for lane in self._lanes if lane not in self._busy]
        if not free or (self._busy and len(self._pending) < self._lane_floor):
            return []
        share = min(self.max_batch, max(self._lane_floor, -(-len(self._pending) // len(free))))
        return [self._claim(lane, share) for lane in free[: -(-len(self._pending) // share)]]

    def _claim(self, runner: Lane, n: int) -> tuple[Lane, list[_Pending]]:
        batch = self._pending[:n]
        del self._pending[:n]
        self._busy.add(runner)
        return runner, batch

    def _start(self, starts: list[tuple[Lane, list[_Pending]]]) -> None:
        for runner, batch in starts:
            try:
                runner.executor.submit(self._work, runner, batch)
            except BaseException as exc:  # executor shut down: fail this batch and the queue, not hang them
                with self._lock:
                    self._busy.discard(runner)
                    batch, self._pending = batch + self._pending, []
                _deliver([(p, exc) for p in batch if p.wanted()])

    def _work(self, runner: Lane, batch: list[_Pending]) -> None:
        """Passes on `runner`'s thread until the plan gives it nothing more (it hands other runners theirs)."""
        while True:
            try:
                self._pass(runner, batch)
            except BaseException as exc:  # past the encoder (its output, a delivery): fail the batch, keep the runner
                _deliver([(p, exc) for p in batch if not p.future.done()])
            with self._lock:
                self._busy.discard(runner)
                starts = self._plan()
            mine = next((b for r, b in starts if r is runner), None)
            self._start([(r, b) for r, b in starts if r is not runner])
            if mine is None:
                return
            batch = mine

    def _pass(self, runner: Lane, batch: list[_Pending]) -> None:
        live = [p for p in batch if p.wanted()]
        if not live:
            return
        try:
            vectors = runner.encode([p.text for p in live])
        except BaseException as exc:
            _deliver([(p, exc) for p in live])
            return
        if len(vectors) != len(live):
            raise RuntimeError(f"the encoder returned {len(vectors)} vectors for {len(live)} questions")
        with self._lock:  # lanes finish passes concurrently
            self.stats.record(len(live), lane=runner is not self._wide)
        # a copy each: a view would keep the whole batch alive in caches
        _deliver([(p, vectors[row].copy()) for row, p in enumerate(live)])


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

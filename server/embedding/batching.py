"""Micro-batching of questions: those that arrive while the encoder is busy go into its next call.

One forward pass over 16 short questions costs far less than 16 passes of one (the encoder's fixed
cost per call dominates a short text), so under concurrency a queue of waiting questions is drained
in batches of at most `max_batch`. Nothing waits on purpose: an idle encoder takes the first
question at once, and a question never waits longer than the call in progress plus the calls for
the questions queued before it (`max_batch` bounds each call).
"""

from __future__ import annotations

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
        self._pending: list[tuple[str, Future[np.ndarray]]] = []
        self._draining = False

    def submit(self, text: str) -> Future[np.ndarray]:
        """The question's vector, as a future; the first question of an idle queue starts a drain."""
        future: Future[np.ndarray] = Future()
        with self._lock:
            self._pending.append((text, future))
            start, self._draining = not self._draining, True
        if start:
            try:
                self._executor.submit(self._drain)
            except BaseException as exc:  # executor shut down: fail what is queued, not hang it
                self._fail_pending(exc)
        return future

    def _drain(self) -> None:
        while True:
            with self._lock:
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
                if not batch:
                    self._draining = False
                    return
            live = [(text, f) for text, f in batch if f.set_running_or_notify_cancel()]
            if not live:
                continue
            try:
                vectors = self._encode([text for text, _ in live])
            except BaseException as exc:
                for _, f in live:
                    f.set_exception(exc)
                continue
            self.stats.record(len(live))
            for row, (_, f) in enumerate(live):
                f.set_result(vectors[row].copy())  # a view would keep the whole batch alive in caches

    def _fail_pending(self, exc: BaseException) -> None:
        with self._lock:
            batch, self._pending, self._draining = self._pending, [], False
        for _, f in batch:
            if f.set_running_or_notify_cancel():
                f.set_exception(exc)

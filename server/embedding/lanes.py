"""Encoder lanes: concurrent questions run as parallel one-thread forward passes, one per core.

On a 2-core machine one onnxruntime session with two intra-op threads does a batch of 16 questions
only ~1.5x faster than one thread does (its threads meet at a barrier after every kernel and wait for
each other there, more so when the event loop takes one of the cores for a moment); two one-thread
sessions each running half the questions keep both cores busy without meeting at all (1.1-1.3x the
two-thread session's throughput on batches of 16, measured by scripts/bench_throughput.py). A lone
question still goes to the two-thread ("wide") session: one thread alone takes ~1.3x as long for it.

`PassGate` keeps the two kinds apart: lane passes run together, a wide pass runs alone, and a wide pass
that waits holds back new lane passes (bulk indexing under a steady stream of questions is not starved).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

MAX_AUTO_LANES = 4  # each lane is a session of its own (~90 MB for MiniLM): the automatic count stays small

_workers = 1  # worker processes sharing this machine's cores (serve --workers sets it before forking)


def set_worker_count(workers: int) -> None:
    """The processes that share the cores (each runs its own encoder and lanes)."""
    global _workers
    _workers = max(1, workers)


def resolve_lanes(setting: int | None, cores: int | None = None, workers: int | None = None) -> int:
    """`server.encoder_lanes`, or when unset one lane per core this process gets (its share of the cores
    among the workers: `set_worker_count`'s unless given), at most MAX_AUTO_LANES; none on one core (the
    wide session is one thread there)."""
    if setting is not None:
        return setting
    cores = cores if cores is not None else (os.cpu_count() or 1)
    if cores < 2:
        return 0
    return min(MAX_AUTO_LANES, max(1, cores // (workers or _workers)))


class PassGate:
    """Lane passes share the cores; a wide pass (every intra-op thread) has them alone. Waiting wide
    passes go first: no new lane pass starts while one waits, so it waits for at most the passes in flight."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._lanes_running = 0
        self._wide_running = False
        self._wide_waiting = 0

    @contextmanager
    def lane(self) -> Iterator[None]:
        with self._cond:
            while self._wide_running or self._wide_waiting:
                self._cond.wait()
            self._lanes_running += 1
        try:
            yield
        finally:
            with self._cond:
                self._lanes_running -= 1
                if not self._lanes_running:
                    self._cond.notify_all()

    @contextmanager
    def wide(self) -> Iterator[None]:
        with self._cond:
            self._wide_waiting += 1
            try:
                while self._wide_running or self._lanes_running:
                    self._cond.wait()
            finally:
                self._wide_waiting -= 1
            self._wide_running = True
        try:
            yield
        finally:
            with self._cond:
                self._wide_running = False
                self._cond.notify_all()

"""Processes starting together on one SQLite routing log (`serve --workers N`) all start: the loser of
the check-then-create race retries instead of dying on "table routing_log already exists"."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import time
from pathlib import Path

PROCESSES = 4
ROUNDS = 12


def start_logs(directory: str, barrier, results) -> None:
    from server.stats.settings import StatsSettings
    from server.stats.writer import RoutingLog

    async def one(path: Path) -> str:
        rlog = RoutingLog(StatsSettings(path=str(path)), path.parent)
        try:
            await rlog.start()
            return "ok"
        except Exception as exc:  # the failure under test, reported to the parent
            return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        finally:
            await rlog.close()

    for round_ in range(ROUNDS):
        barrier.wait(timeout=60)
        time.sleep(0.001)
        results.put(asyncio.run(one(Path(directory) / f"log{round_}.sqlite3")))


def test_workers_starting_together_all_create_or_find_the_table(tmp_path):
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=start_logs, args=(str(tmp_path), barrier, results)) for _ in range(PROCESSES)]
    for proc in procs:
        proc.start()
    try:
        outcomes = [results.get(timeout=120) for _ in range(PROCESSES * ROUNDS)]
    finally:
        for proc in procs:
            proc.join(timeout=30)
    assert [o for o in outcomes if o != "ok"] == []

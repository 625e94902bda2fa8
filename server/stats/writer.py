"""The routing log writer: the request path only enqueues; a background task writes batches.

A bounded queue keeps memory flat when the database is slow or down: entries beyond it are dropped
and counted, never waited for. Writes run in a worker thread through SQLAlchemy, so a slow log
database cannot stall the event loop. SQLAlchemy is imported when the engine is first made (in `start`,
on a worker thread): a server whose log is a local file opens it once it has answered (`start_soon`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.health import Health
from ..bulkhead import LOG_POOL, run_on
from ..local_sqlite import is_damaged, set_aside_if_damaged
from .record import RoutingRecord
from .settings import StatsSettings

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.engine import Engine

    from ..start_gate import StartGate
    from .rollup_schema import RollupTables

log = logging.getLogger("intent_router.stats")


@dataclass
class LogCounters:
    """Since this process started (with a shared PostgreSQL log, each process counts its own)."""

    accepted: int = 0
    dropped: int = 0  # queue full
    written: int = 0
    failed: int = 0  # entries in batches the database refused
    batches: int = 0
    purged: int = 0  # removed by retention
    write_seconds: float = 0.0  # time spent in batch inserts (worker thread)


class RoutingLog:
    def __init__(self, settings: StatsSettings, root: Path, url: str | None = None) -> None:
        self.settings = settings
        self.root = root
        self._url = url
        self._engine: Engine | None = None
        self._table: sa.Table | None = None
        self._rollups: RollupTables | None = None
        self._made = threading.Lock()  # engine and table are made once, by whichever thread asks first
        self.counters = LogCounters()
        self._queue: asyncio.Queue[RoutingRecord] = asyncio.Queue(maxsize=settings.queue_size)
        self._batch_ready = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._accepting = False
        self._urgent = False  # flush/close: write partial batches now instead of waiting
        self._last_error_log = 0.0
        self._last_write_failed = False  # the most recent batch was refused by the database
        self.replica: str | None = None  # written with every entry (cluster.enabled: this replica's name)
        self._opening: asyncio.Future[None] | None = None  # start_soon's start, until it is done
        self._gate: StartGate | None = None  # start_soon's start waits for it
        self._closed = False
        self.open_error: str | None = None  # why start_soon's start failed (nothing is written then)

    @property
    def local(self) -> bool:
        """A SQLite file of this replica's own (the default), not a database shared with other replicas."""
        url = self._url or self.settings.url
        return url is None or url.startswith("sqlite")

    @property
    def engine(self) -> Engine:
        with self._made:
            if self._engine is None:
                from .schema import log_url, make_engine

                self._engine = make_engine(self._url or log_url(self.settings, self.root))
            return self._engine

    @property
    def table(self) -> sa.Table:
        with self._made:
            if self._table is None:
                from .schema import log_table

                self._table = log_table(self.settings.table)
            return self._table

    @property
    def rollups(self) -> RollupTables:
        """The rollup tables the statistics read (stats/rollup_schema.py), kept beside the raw rows."""
        with self._made:
            if self._rollups is None:
                from .rollup_schema import rollup_tables

                self._rollups = rollup_tables(self.settings.table)
            return self._rollups

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        await run_on(LOG_POOL, lambda: (self.engine, self.table, self.rollups))  # SQLAlchemy loads off the loop
        await self._create_table()
        try:
            await run_on(LOG_POOL, self.purge)
        except Exception as exc:
            self._warn(f"routing log retention failed: {type(exc).__name__}: {exc}")
        self._accepting = not self._closed  # close() may have begun while start_soon's start was opening
        self._tasks = [
            asyncio.create_task(self._write_loop(), name="routing-log-writer"),
            asyncio.create_task(self._retention_loop(), name="routing-log-retention"),
        ]

    def start_soon(self, gate: StartGate | None = None) -> None:
        """Accept entries now and open the database in the background, once `gate` opens (the server has
        answered): what arrives meanwhile waits in the queue (bounded, as always) and is written once the
        table exists; `health` says "starting" until then. If it cannot be opened, that is logged, `health`
        says "failing" with the reason, and entries are counted as failed writes."""
        self._accepting = True
        self._gate = gate
        self._opening = asyncio.ensure_future(self._start_after(gate))
        self._opening.add_done_callback(self._opened)

    async def _start_after(self, gate: StartGate | None) -> None:
        if gate is not None:
            await gate.wait()
        await self.start()

    def _opened(self, opening: asyncio.Future[None]) -> None:
        if opening.cancelled() or opening.exception() is None:
            return
        exc = opening.exception()
        self.open_error = f"{type(exc).__name__}: {exc}"
        log.error("the routing log cannot open its database (%s); nothing will be written", self.open_error)
        self._accepting = False
        self._last_write_failed = True
        while not self._queue.empty():  # never to be written: counted, and flush() does not wait for them
            self._queue.get_nowait()
            self._queue.task_done()
            self.counters.failed += 1

    async def ready(self) -> None:
        """Wait until `start_soon`'s start is done (at once when the log was started with `start`); a
        reader needs it now, so a start still held back by its gate begins."""
        if self._gate is not None:
            self._gate.open()
        if self._opening is not None and not self._opening.cancelled():  # cancelled: closed before it opened
            with contextlib.suppress(Exception):
                await asyncio.shield(self._opening)

    async def _create_table(self) -> None:
        """Create or migrate the table and its rollups (a log without rollups gets them filled from its rows:
        stats/backfill.py). Replicas or `--workers` starting together on one database race here
        (PostgreSQL's CREATE TABLE IF NOT EXISTS and ADD COLUMN are not atomic; on SQLite the loser of the
        check-then-create sees "table already exists"): the loser finds it done when it retries."""
        import sqlalchemy as sa

        from .backfill import ensure_rollups
        from .schema import add_missing_columns

        for attempt in range(5):
            try:
                await run_on(LOG_POOL, self.table.metadata.create_all, self.engine)
                await run_on(LOG_POOL, add_missing_columns, self.engine, self.table)
                await run_on(LOG_POOL, ensure_rollups, self.engine, self.table, self.rollups)
                return
            except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
                if attempt == 4:
                    raise
                await asyncio.sleep(0.1 * (attempt + 1))

    async def close(self, drain_seconds: float = 5.0) -> None:
        """Stop accepting, write what is queued (bounded wait, a start still opening the database included),
        release the engine."""
        self._accepting = False
        self._closed = True
        held_back = self._gate is not None and not self._gate.is_open  # start_soon's start has not begun
        if not (held_back and self._queue.empty()):  # a database not yet opened is not opened to write nothing
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.flush(), drain_seconds)
        if self._opening is not None and not self._opening.done():
            self._opening.cancel()
            await asyncio.gather(self._opening, return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._engine is not None:  # none when the database could not be opened
            await run_on(LOG_POOL, self._engine.dispose)

    def apply(self, settings: StatsSettings) -> None:
        """Take a reloaded config's live settings (store_queries at once: rows still queued lose their
        question text too; retention, batching and max_window_rows from their next use). Where and how
        the log is stored and queued (enabled, url, path, table, queue_size) stays as started: a reload
        reports those as needing a restart (server/runtime/restart.py)."""
        fixed = {"enabled", "url", "path", "table", "queue_size"}
        self.settings = settings.model_copy(update={k: getattr(self.settings, k) for k in fixed})
        self._batch_ready.set()  # a new flush_interval or batch_size applies to the batch being gathered

    # --- request path -----------------------------------------------------------------------
    def record(self, entry: RoutingRecord) -> bool:
        """Enqueue without waiting; False (and counted) when the queue is full or the log closed."""
        if not self._accepting:
            self.counters.dropped += 1
            return False
        if entry.replica is None:
            entry.replica = self.replica
        if not self.settings.store_queries:  # personal data: neither the question nor the values it named
            entry.question = entry.parameters = None
        try:  # the entry becomes a row in the writer's thread: JSON encoding off the event loop
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:
            self.counters.dropped += 1
            return False
        self.counters.accepted += 1
        if self._queue.qsize() >= self.settings.batch_size:
            self._batch_ready.set()
        return True

    async def flush(self) -> None:
        """Write partial batches now and wait until everything accepted so far is written (or failed)."""
        await self.ready()
        self._urgent = True
        self._batch_ready.set()
        try:
            await self._queue.join()
        finally:
            self._urgent = False

    # --- background -------------------------------------------------------------------------
    async def _write_loop(self) -> None:
        while True:
            first = await self._queue.get()
            size = self.settings.batch_size
            if not self._urgent and self._queue.qsize() + 1 < size:
                self._batch_ready.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._batch_ready.wait(), self.settings.flush_interval)
            batch = [first]
            while len(batch) < size and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            started = time.perf_counter()
            try:
                await run_on(LOG_POOL, self._insert, batch)
                self.counters.written += len(batch)
                self.counters.batches += 1
                self._last_write_failed = False
            except Exception as exc:  # the log must never take the server down
                self.counters.failed += len(batch)
                self._last_write_failed = True
                self._warn(f"routing log write of {len(batch)} entries failed: {type(exc).__name__}: {exc}")
                if self.local:
                    await run_on(LOG_POOL, self._reopen_file, exc)
            finally:
                self.counters.write_seconds += time.perf_counter() - started
                for _ in batch:
                    self._queue.task_done()

    def _insert(self, entries: list[RoutingRecord]) -> None:
        """The raw rows and their rollups in one transaction: the statistics never see one without the other."""
        import sqlalchemy as sa

        from .rollup_build import RollupBatch
        from .unmatched_copy import copies

        rows = [entry.to_row() for entry in entries]
        rollup = RollupBatch()
        for entry, row in zip(entries, rows, strict=True):
            rollup.add(entry, row["ts_ms"])
        if not self.settings.store_queries:  # turned off after these entries were queued
            for row in rows:
                row["question"] = row["parameters"] = None
        if self._last_write_failed:  # the file may have been truncated or replaced: the table comes back with it
            from .backfill import ensure_rollups
            from .schema import add_missing_columns

            self.table.metadata.create_all(self.engine)
            add_missing_columns(self.engine, self.table)
            ensure_rollups(self.engine, self.table, self.rollups)  # and its rollups, from what rows it still has
        unmatched = copies(rows)
        with self.engine.begin() as conn:
            conn.execute(sa.insert(self.table), rows)
            rollup.write(conn, self.rollups)
            if unmatched:
                conn.execute(sa.insert(self.rollups.unmatched), unmatched)

    def _reopen_file(self, failure: Exception) -> None:
        """After a refused batch the log file is opened afresh: a pooled connection keeps what it opened (a
        file replaced under it, or one SQLite fell back to opening read-only while it refused writes). A
        damaged file is set aside (kept for inspection) and the next batch starts a new one; a sibling worker
        that already did so leaves only the reconnect to do."""
        self.engine.dispose()
        if not is_damaged(failure):
            return
        aside = set_aside_if_damaged(Path(str(self.engine.url.database)))
        if aside is not None:
            log.error("the routing log file was damaged: set aside as %s, a new one is started", aside.name)

    async def _retention_loop(self) -> None:
        while True:  # the first purge ran in start()
            await asyncio.sleep(self.settings.retention_check_seconds)
            try:
                await run_on(LOG_POOL, self.purge)
            except Exception as exc:
                self._warn(f"routing log retention failed: {type(exc).__name__}: {exc}")

    def purge(self, now: float | None = None) -> int:
        """Delete entries older than retention_days, and their rollups; returns how many entries went.
        The cutoff is brought back to a whole hour (the coarsest rollup bucket), so a rollup row goes
        exactly when every entry it counts goes: figures from rollups and from raw rows stay equal."""
        import sqlalchemy as sa

        from .rollup_schema import HOUR, SPANS

        cutoff = (now if now is not None else time.time()) - self.settings.retention_days * 86400
        hour = int(cutoff // HOUR * HOUR)
        with self.engine.begin() as conn:
            removed = conn.execute(sa.delete(self.table).where(self.table.c.ts_ms < hour * 1000)).rowcount or 0
            for rollup in self.rollups.all()[:-1]:  # not the state row
                for span in SPANS:  # span first: a range of the rollup's key
                    conn.execute(sa.delete(rollup).where(rollup.c.span == span, rollup.c.bucket < hour))
            unmatched = self.rollups.unmatched
            conn.execute(sa.delete(unmatched).where(unmatched.c.ts_ms < hour * 1000))
        self.counters.purged += removed
        return removed

    def _warn(self, message: str) -> None:
        now = time.monotonic()
        if now - self._last_error_log > 30:  # at most one warning per 30 s when the database is down
            self._last_error_log = now
            log.warning(message)

    # --- status -----------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """For /health: "starting" while `start_soon` opens the database, "failing" while the latest batch was
        refused (or the database could not be opened: `reason`); failed and dropped entry counts."""
        starting = self._opening is not None and not self._opening.done()
        body: dict[str, Any] = {
            "status": Health.STARTING if starting else Health.FAILING if self._last_write_failed else Health.OK,
            "failed_writes": self.counters.failed,
            "dropped": self.counters.dropped,
            "written": self.counters.written,
        }
        if self.open_error is not None:
            body["reason"] = f"cannot open the database: {self.open_error}"
        return body

    def queue_figures(self) -> dict[str, Any]:
        """The queue and the counters: what /metrics reads, without the engine (a scrape that comes before
        the log has opened its database must not import SQLAlchemy on the event loop to open it)."""
        return {
            "queue_length": self._queue.qsize(),
            "queue_capacity": self.settings.queue_size,
            **asdict(self.counters),
            "write_seconds": round(self.counters.write_seconds, 4),
            "last_write_failed": self._last_write_failed,
        }

    def status(self) -> dict[str, Any]:
        """Where the log is and its figures (the statistics endpoint, after `ready`)."""
        from .schema import backend_name, safe_url

        return {
            "backend": backend_name(self.engine),
            "url": safe_url(self.engine, self.root),
            "table": self.table.name,
            "batch_size": self.settings.batch_size,
            "retention_days": self.settings.retention_days,
            **self.queue_figures(),
        }

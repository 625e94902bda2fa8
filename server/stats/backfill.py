"""The upgrade path: a routing log written before rollups existed gets them once, when it is opened.

Runs in one transaction that first takes the log's write lock (PostgreSQL: a lock on the raw table that
writers wait for; SQLite: the database's write lock, taken by claiming the state row), so entries written
meanwhile by another process of this version are neither missed nor counted twice: a process that finds the
state row already there knows the rollups are complete and backfills nothing. Processes of a version without
rollups that keep writing after the upgrade add raw rows the rollups never see (upgrade replicas together).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .record import RoutingRecord
from .rollup_build import RollupBatch
from .rollup_schema import RollupTables
from .schema import superseded_indexes
from .unmatched_copy import copy_existing, unmatched_index

log = logging.getLogger("intent_router.stats")

CHUNK = 20_000  # raw rows read and added per step (memory stays bounded on a large log)
JSON_FIELDS = ("stage_scores", "stage_ms", "search_failures", "fan_out_sources")
READ = (
    "id",
    "ts_ms",
    "kind",
    "adapter",
    "outcome",
    "selected_adapter",
    "template_id",
    "combined_score",
    "embedding_score",
    "latency_ms",
    "error_code",
    "replica",
    *JSON_FIELDS,
)


def ensure_rollups(engine: Engine, table: sa.Table, tables: RollupTables) -> int | None:
    """Create the rollup tables if missing and, the first time, add every raw row to them; how many raw
    rows were added (None when the rollups were already there). The unmatched entries' table is claimed
    and filled the same way, on its own (a log with rollups from before it existed gets it filled alone)."""
    for rollup in (*tables.all(), tables.unmatched):
        rollup.create(engine, checkfirst=True)
    unmatched_index(tables.unmatched, engine.dialect.name).create(engine, checkfirst=True)
    _drop_indexes(engine, superseded_indexes(table))
    started = time.perf_counter()
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":  # writers of raw rows wait until the rollups are complete
            quote = conn.dialect.identifier_preparer.quote
            conn.execute(sa.text(f"LOCK TABLE {quote(table.name)} IN SHARE ROW EXCLUSIVE MODE"))
        if _claim(conn, tables.unmatched.name, tables.state):
            copied = copy_existing(conn, table, tables.unmatched)
            _record(conn, tables.state, tables.unmatched.name, copied)
        if not _claim(conn, table.name, tables.state):
            return None
        added = _backfill(conn, table, tables)
        _record(conn, tables.state, table.name, added)
    if added:
        log.info(
            "routing log: %d existing entries added to the rollups in %.1f s", added, time.perf_counter() - started
        )
    return added


def _record(conn: sa.Connection, state: sa.Table, name: str, rows: int) -> None:
    conn.execute(sa.update(state).where(state.c.log_table == name).values(backfilled_rows=rows))


def _drop_indexes(engine: Engine, names: list[str]) -> None:
    """Drop these indexes where they exist (names from this schema, quoted by the dialect)."""
    quote = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        for name in names:
            conn.execute(sa.text(f"DROP INDEX IF EXISTS {quote(name)}"))


def _claim(conn: sa.Connection, name: str, state: sa.Table) -> bool:
    """Insert the state row `name` unless it exists; True when this transaction inserted it (and must fill
    what it stands for)."""
    from sqlalchemy.dialects import postgresql, sqlite

    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = insert(state).values(log_table=name, backfilled_rows=0, backfilled_at=time.time())
    claimed = stmt.on_conflict_do_nothing(index_elements=["log_table"]).returning(state.c.log_table)
    return conn.execute(claimed).first() is not None  # (rowcount is -1 here on PostgreSQL)


def _backfill(conn: sa.Connection, table: sa.Table, tables: RollupTables) -> int:
    columns = [table.c[name] for name in READ]
    last, added = None, 0
    while True:
        query = sa.select(*columns).order_by(table.c.id).limit(CHUNK)
        if last is not None:
            query = query.where(table.c.id > last)
        rows = conn.execute(query).all()
        if not rows:
            return added
        batch = RollupBatch()
        for row in rows:
            batch.add(record_of(row._mapping), int(row.ts_ms))
        batch.write(conn, tables)
        added += len(rows)
        last = rows[-1].id


def record_of(row: Any) -> RoutingRecord:
    """A raw row as the entry the writer had (what the rollups read of it)."""
    fields = {name: row[name] for name in READ if name not in ("id", "ts_ms", *JSON_FIELDS)}
    parsed = {name: json.loads(row[name]) if row[name] else None for name in JSON_FIELDS}
    return RoutingRecord(
        ts=row["ts_ms"] / 1000,
        **fields,
        stage_scores=parsed["stage_scores"] or {},
        stage_ms=parsed["stage_ms"] or {},
        search_failures=parsed["search_failures"] or [],
        fan_out_sources=parsed["fan_out_sources"],
    )

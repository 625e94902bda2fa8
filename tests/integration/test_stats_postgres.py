"""The routing log on a real PostgreSQL server (127.0.0.1:5432, database `test`, trust auth; a schema of the run's own):
batched writes, overflow, retention and the same known-sequence figures as on SQLite."""

from __future__ import annotations

import time
import uuid

import pytest
import sqlalchemy as sa

from server.stats import RoutingLog, RoutingRecord, StatsSettings
from server.testing.pg import PgDatabase
from tests.unit.test_stats_aggregates import check_figures, write_sequence

pytestmark = pytest.mark.needs_postgres


@pytest.fixture
async def pg_log(tmp_path, pg_database: PgDatabase):
    """Routing logs in tables of their own inside the run's PostgreSQL schema (tests/conftest.py)."""
    url = pg_database.url
    logs: list[RoutingLog] = []

    async def make(**settings) -> RoutingLog:
        table = f"routing_log_test_{uuid.uuid4().hex[:10]}"
        rlog = RoutingLog(StatsSettings(url=url, table=table, **settings), tmp_path)
        await rlog.start()
        logs.append(rlog)
        return rlog

    yield make
    for rlog in logs:
        await rlog.close()
        engine = sa.create_engine(url)
        rlog.table.drop(engine, checkfirst=True)
        engine.dispose()


async def test_known_sequence_figures_on_postgres(pg_log):
    rlog = await pg_log(store_queries=True, retention_days=36500, flush_interval=0.05)
    await write_sequence(rlog)
    assert rlog.status()["backend"] == "postgresql"
    check_figures(rlog)


async def test_batches_overflow_and_retention_on_postgres(pg_log):
    rlog = await pg_log(queue_size=50, batch_size=20, flush_interval=0.05, retention_days=30)
    now = time.time()
    accepted = [
        rlog.record(
            RoutingRecord(ts=now - (40 * 86400 if i < 10 else 0), kind="query", adapter="a", outcome="executed")
        )
        for i in range(60)
    ]
    assert accepted.count(False) == 10 and rlog.counters.dropped == 10
    await rlog.flush()
    assert (rlog.counters.written, rlog.counters.batches) == (50, 3)
    assert rlog.purge(now) == 10
    with rlog.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(rlog.table)).scalar() == 40


async def test_two_processes_share_one_postgres_log(pg_log, tmp_path):
    """Two writers (as two server processes would) append to the same table; figures see both."""
    first = await pg_log(flush_interval=0.05)
    second = RoutingLog(first.settings, tmp_path)  # its own engine and queue, the same table
    await second.start()
    try:
        for rlog, adapter in ((first, "a"), (second, "b")):
            for _ in range(5):
                rlog.record(RoutingRecord(ts=time.time(), kind="query", adapter=adapter, outcome="executed"))
            await rlog.flush()
        with first.engine.connect() as conn:
            counts = dict(
                conn.execute(sa.select(first.table.c.adapter, sa.func.count()).group_by(first.table.c.adapter)).all()
            )
        assert counts == {"a": 5, "b": 5}
    finally:
        await second.close()

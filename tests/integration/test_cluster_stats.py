"""Several replicas share one PostgreSQL routing log: each entry names its replica, a table from before the
column existed is migrated on start, and the statistics count every replica's decisions per replica."""

from __future__ import annotations

import time
import uuid

import pytest
import sqlalchemy as sa

from server.stats import RoutingLog, RoutingRecord, StatsSettings
from server.stats.aggregates import Window, compute
from server.stats.schema import log_table
from server.testing.pg import PgDatabase

pytestmark = pytest.mark.needs_postgres


async def test_replicas_sharing_a_postgres_log_are_counted_per_replica(tmp_path, pg_database: PgDatabase):
    url, name = pg_database.url, f"routing_log_replicas_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(url)
    columns = [
        sa.Column(c.name, c.type, primary_key=c.primary_key, autoincrement=c.autoincrement, nullable=c.nullable)
        for c in log_table(name).columns
        if c.name != "replica"
    ]
    old = sa.Table(name, sa.MetaData(), *columns)
    old.create(engine)  # as an older version created it
    logs = []
    try:
        for replica, entries in (("replica-a", 3), ("replica-b", 2), (None, 1)):
            rlog = RoutingLog(StatsSettings(url=url, table=name, flush_interval=0.05), tmp_path)
            rlog.replica = replica
            await rlog.start()
            logs.append(rlog)
            for _ in range(entries):
                assert rlog.record(RoutingRecord(ts=time.time(), kind="query", adapter="hr", outcome="executed"))
            await rlog.flush()
        assert "replica" in {c["name"] for c in sa.inspect(engine).get_columns(name)}
        figures = compute(engine, logs[0].table, Window(time.time() - 60, time.time() + 1))
        assert figures["total"] == 6
        assert figures["by_replica"] == [
            {"replica": "replica-a", "count": 3},
            {"replica": "replica-b", "count": 2},
            {"replica": None, "count": 1},
        ]
    finally:
        for rlog in logs:
            await rlog.close()
        old.drop(engine, checkfirst=True)
        engine.dispose()

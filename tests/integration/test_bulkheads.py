"""Bulkheads (issue 12 item 6): one slow source must not stall the others.

The slow source is real: a PostgreSQL adapter whose template reads a table the test holds an ACCESS
EXCLUSIVE lock on, so its queries wait in the server (no CPU spent) until the lock is released. Next to
it, a DuckDB adapter answers over the same HTTP app. Before the bulkheads every query ran on asyncio's
default 6-worker pool, so 8 waiting PostgreSQL queries made the DuckDB questions wait for the lock.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import psycopg

from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, make_tree

SLOW_LIBRARY = """
templates:
  - id: count_gate_rows
    description: Count the rows of the gate table
    nl_examples: ["how many rows are in the gate table?", "count the gate rows"]
    sql: "SELECT count(*) AS n FROM {table}"
"""
FAST_LIBRARY = """
templates:
  - id: total_sales
    description: Total amount of all sales
    nl_examples: ["what is the total amount of sales?", "sum of all sales"]
    sql: "SELECT sum(amount) AS total FROM sales"
"""
ADAPTERS = """
adapters:
  - name: slowpg
    type: sql
    connection: {{url: "{url}", connect_timeout: 3, pool_size: 10}}
    templates: ["templates/slow/*.yaml"]
    confidence_threshold: 0.3
    query_timeout: 30
    max_concurrency: {max_concurrency}
    queue_timeout: {queue_timeout}
  - name: sales
    type: duckdb
    connection: {{path: templates/sales.duckdb}}
    templates: ["templates/fast/*.yaml"]
    confidence_threshold: 0.3
"""
CONFIG = BASE_CONFIG + "result_cache: {enabled: false}\n"  # every question runs its query
SLOW_Q = {"query": "how many rows are in the gate table?", "adapter": "slowpg"}
FAST_Q = {"query": "what is the total amount of sales?", "adapter": "sales"}


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@contextmanager
def gate_table(db) -> Iterator[str]:
    """A table of the test's own in the run's schema; dropped afterwards."""
    table = f"gate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(db.admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{db.schema}".{table} (n int)')
        conn.execute(f'INSERT INTO "{db.schema}".{table} VALUES (1), (2)')
    try:
        yield table
    finally:
        with psycopg.connect(_dsn(db.admin_url), autocommit=True) as conn:
            conn.execute(f'DROP TABLE IF EXISTS "{db.schema}".{table}')


@contextmanager
def locked(db, table: str) -> Iterator[None]:
    """Hold ACCESS EXCLUSIVE on the table: every SELECT on it waits until the block ends."""
    with psycopg.connect(_dsn(db.admin_url)) as conn:
        conn.execute(f'LOCK TABLE "{db.schema}".{table} IN ACCESS EXCLUSIVE MODE')
        try:
            yield
        finally:
            conn.rollback()


async def waiting_on(db, table: str, n: int) -> bool:
    """Wait (up to 10 s) until `n` queries on the table are blocked on its lock in the server."""
    sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with psycopg.connect(_dsn(db.admin_url), autocommit=True) as conn:
            row = conn.execute(sql, [f"%{table}%"]).fetchone()
        if row is not None and row[0] >= n:
            return True
        await asyncio.sleep(0.1)
    return False


def make_tree_for(tmp_path, db, table: str, *, max_concurrency: int, queue_timeout: float):
    con = duckdb.connect(str(tmp_path / "templates" / "sales.duckdb"))
    con.execute("CREATE TABLE sales AS SELECT range AS id, (range % 97)::DOUBLE AS amount FROM range(200000)")
    con.close()
    adapters = ADAPTERS.format(url=db.url, max_concurrency=max_concurrency, queue_timeout=queue_timeout)
    libraries = {"slow/lib.yaml": SLOW_LIBRARY.format(table=table), "fast/lib.yaml": FAST_LIBRARY}
    return make_tree(tmp_path, CONFIG, {"a.yaml": adapters}, libraries)


async def timed_fast_queries(client, n: int) -> list[float]:
    """Sequential DuckDB questions; each must answer within 5 s (the old shared pool made them wait ~30 s)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        resp = await asyncio.wait_for(client.post("/v1/query", json=FAST_Q), 5)
        body = await resp.json()
        assert resp.status == 200, body
        assert body["metadata"]["template_id"] == "total_sales"
        times.append(time.perf_counter() - start)
    return times


async def test_slow_adapter_does_not_stall_another(tmp_path, pg_database):
    (tmp_path / "templates").mkdir()
    with gate_table(pg_database) as table:
        tree = make_tree_for(tmp_path, pg_database, table, max_concurrency=8, queue_timeout=20)
        async with running_app(tree) as (client, _):
            await timed_fast_queries(client, 5)  # warm: embedding cache, DuckDB pages
            idle: list[float] = []
            busy: list[float] = []
            for _ in range(3):  # idle and busy in alternating rounds: other load on the machine hits both alike
                idle += await timed_fast_queries(client, 9)
                with locked(pg_database, table):
                    slow = [asyncio.ensure_future(client.post("/v1/query", json=SLOW_Q)) for _ in range(8)]
                    assert await waiting_on(pg_database, table, 8)  # all eight wait on the lock in the server
                    busy += await timed_fast_queries(client, 9)
                    assert not any(task.done() for task in slow)  # the slow source was still stalled meanwhile
                answers = await asyncio.gather(*slow)
                assert [r.status for r in answers] == [200] * 8
    idle_p50, busy_p50 = statistics.median(idle), statistics.median(busy)
    ratio = busy_p50 / idle_p50
    print(f"bulkhead: idle p50 {idle_p50 * 1000:.1f} ms, busy p50 {busy_p50 * 1000:.1f} ms, ratio {ratio:.2f}")
    assert ratio <= 2.0, (idle_p50, busy_p50)


async def test_full_queue_answers_503_naming_the_adapter(tmp_path, pg_database):
    (tmp_path / "templates").mkdir()
    with gate_table(pg_database) as table:
        tree = make_tree_for(tmp_path, pg_database, table, max_concurrency=2, queue_timeout=0.3)
        async with running_app(tree) as (client, _):
            with locked(pg_database, table):
                slow = [asyncio.ensure_future(client.post("/v1/query", json=SLOW_Q)) for _ in range(2)]
                assert await waiting_on(pg_database, table, 2)
                start = time.monotonic()
                resp = await client.post("/v1/query", json=SLOW_Q)
                waited = time.monotonic() - start
                body = await resp.json()
                fast = await client.post("/v1/query", json=FAST_Q)  # the other source still answers
                assert fast.status == 200
            answers = await asyncio.gather(*slow)
            assert [r.status for r in answers] == [200, 200]
            health = await (await client.get("/health")).json()
    assert resp.status == 503, body
    assert body["error"] == {
        "code": "source_busy",
        "message": "adapter 'slowpg': busy: 2 queries running, no slot free within 0.3 s",
    }
    assert waited < 5  # the queue timeout, not the query timeout (30 s)
    assert health["status"] == "ok"  # shedding load is not a source failure: the breaker stayed closed

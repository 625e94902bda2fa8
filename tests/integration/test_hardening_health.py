"""/health checks the database file itself (removed or replaced under an open pool) and reports the
routing log's failed writes."""

from __future__ import annotations

import os
import sqlite3

import duckdb
import sqlalchemy as sa

from server.testing.adapter_harness import started
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, make_people_db, people_tree
from server.web.routing_log import STATS_LOG

QUESTION = {"query": "who works in the Engineering department?", "adapter": "people"}


async def health(client) -> dict:
    resp = await client.get("/health")
    return await resp.json()


NO_RESULT_CACHE = BASE_CONFIG + "result_cache: {enabled: false}\n"  # every question reaches the source


async def test_sqlite_file_removed_under_the_pool_is_down_and_queries_503(tmp_path):
    async with running_app(people_tree(tmp_path, NO_RESULT_CACHE)) as (client, _):
        assert (await client.post("/v1/query", json=QUESTION)).status == 200  # the pool has a connection open
        assert (await health(client))["adapters"]["people"]["status"] == "ok"
        (tmp_path / "templates" / "people.db").unlink()
        body = await health(client)
        resp = await client.post("/v1/query", json=QUESTION)
        error = await resp.json()
    assert body["status"] == "degraded"
    assert body["adapters"]["people"] == {"status": "down", "reason": "database file is missing"}
    assert resp.status == 503 and error["error"]["code"] == "source_unavailable"


async def test_a_sqlite_file_that_is_no_database_is_down_not_ok(tmp_path, caplog):
    """SQLite opens any file without reading it: health reads the schema, so garbage is `down` at once, not
    `ok` while every question answers 503. The failed query's log line names the driver's error, not the
    statement or the question's values."""
    tree = people_tree(tmp_path, NO_RESULT_CACHE)
    (tmp_path / "templates" / "people.db").write_bytes(bytes(range(256)) * 1200)
    async with running_app(tree) as (client, _):
        body = await health(client)
        resp = await client.post("/v1/query", json=QUESTION)
        error = await resp.json()
    assert body["status"] == "degraded"
    assert (body["adapters"]["people"]["status"], body["adapters"]["people"]["reason"]) == ("down", "database error")
    assert resp.status == 503 and error["error"]["code"] == "source_unavailable"
    failed = [r.getMessage() for r in caplog.records if r.name == "intent_router.adapters.sql"]
    assert failed and all("DatabaseError: file is not a database" in m for m in failed)
    assert not any("Engineering" in m or "SELECT" in m or "sqlalche.me" in m for m in failed)


async def test_sqlite_file_replaced_under_the_pool_is_reported_then_reopened(tmp_path):
    db = tmp_path / "templates" / "people.db"
    async with running_app(people_tree(tmp_path, NO_RESULT_CACHE)) as (client, _):
        first = await (await client.post("/v1/query", json=QUESTION)).json()
        fresh = make_people_db(tmp_path / "fresh.db")
        con = sqlite3.connect(fresh)
        con.execute("INSERT INTO people (name, department, salary) VALUES ('Barbara', 'Engineering', 1)")
        con.commit()
        con.close()
        os.replace(fresh, db)  # what a deploy script does: a new file under the same name
        body = await health(client)
        second = await (await client.post("/v1/query", json=QUESTION)).json()
        after = await health(client)
    assert body["adapters"]["people"] == {
        "status": "down",
        "reason": "database file was replaced under the open connection",
    }
    assert len(second["rows"]) == len(first["rows"]) + 1  # the new file is read, not the old inode
    assert after["adapters"]["people"]["status"] == "ok"


async def test_a_removed_or_replaced_database_file_is_never_answered_from_the_result_cache(tmp_path):
    """The result cache is on (the default): a question answered before the file went is a 503 like
    any other once the file is missing (not the cached rows of a database that is gone), and once a new
    file is in place it is answered from the new file, not from what the cache kept of the old one."""
    db = tmp_path / "templates" / "people.db"
    async with running_app(people_tree(tmp_path)) as (client, _):
        first = await (await client.post("/v1/query", json=QUESTION)).json()
        again = await (await client.post("/v1/query", json=QUESTION)).json()
        assert again["metadata"]["from_cache"] is True
        os.replace(db, tmp_path / "away.db")
        gone = await client.post("/v1/query", json=QUESTION)
        gone_body = await gone.json()
        fresh = make_people_db(tmp_path / "fresh.db")
        con = sqlite3.connect(fresh)
        con.execute("INSERT INTO people (name, department, salary) VALUES ('Barbara', 'Engineering', 1)")
        con.commit()
        con.close()
        os.replace(fresh, db)
        back = await (await client.post("/v1/query", json=QUESTION)).json()
    assert gone.status == 503 and gone_body["error"]["code"] == "source_unavailable"
    assert "database file is missing" in gone_body["error"]["message"]
    assert back["metadata"]["from_cache"] is False and len(back["rows"]) == len(first["rows"]) + 1


COUNT = 'templates:\n  - {id: count, description: n, sql: "SELECT count(*) AS n FROM t"}\n'


def build_counting(target, rows: int) -> None:
    con = duckdb.connect(str(target))
    con.execute(f"CREATE TABLE t AS SELECT range AS n FROM range({rows})")
    con.close()


def duckdb_counting(tmp_path, rows: int) -> tuple:
    """A DuckDB file with `rows` rows in t, and the settings of an adapter `sales` on it."""
    path = tmp_path / "sales.duckdb"
    build_counting(path, rows)
    return path, {"name": "sales", "type": "duckdb", "connection": {"path": str(path)}}


def replace_with(path, rows: int) -> None:
    """Another file with `rows` rows moved over `path` (a new inode, as a deploy does)."""
    build_counting(path.with_name("next.duckdb"), rows)
    os.replace(path.with_name("next.duckdb"), path)


async def test_duckdb_file_removed_or_replaced(tmp_path):
    path, settings = duckdb_counting(tmp_path, 3)
    async with started(tmp_path, settings, COUNT) as adapter:
        template = adapter.templates["count"]
        assert (await adapter.execute(template, {})).rows == [{"n": 3}]
        replace_with(path, 5)
        assert (await adapter.health())["status"] == "down"
        assert (await adapter.execute(template, {})).rows == [{"n": 5}]
        assert (await adapter.health())["status"] == "ok"
        path.unlink()
        assert await adapter.health() == {"status": "down", "reason": "database file is missing"}


async def test_duckdb_cached_answers_follow_the_file(tmp_path):
    """With a result cache: a replaced file is answered from the new file (the reopen drops the adapter's
    cached answers), a removed one is a 503, not the rows cached from it."""
    import pytest

    from server.adapters.result_cache_memory import MemoryResultCache
    from server.errors import SourceUnavailable

    path, settings = duckdb_counting(tmp_path, 3)
    async with started(tmp_path, settings, COUNT) as adapter:
        adapter.context.result_cache = MemoryResultCache(2**20, 2**16)
        template = adapter.templates["count"]
        assert (await adapter.run(template, {})).rows == [{"n": 3}]
        assert (await adapter.run(template, {})).from_cache
        replace_with(path, 5)
        fresh = await adapter.run(template, {})
        assert fresh.rows == [{"n": 5}] and not fresh.from_cache
        assert (await adapter.run(template, {})).from_cache
        path.unlink()
        with pytest.raises(SourceUnavailable, match="database file is missing"):
            await adapter.run(template, {})


async def test_an_open_circuit_is_down_in_health_although_the_source_answers_a_ping(tmp_path):
    """A database file overwritten with garbage still answers `SELECT 1` (SQLite reads no page for it),
    while every query fails: once the circuit opens, health says so instead of ok."""
    import pytest

    from server.errors import SourceUnavailable

    db = tmp_path / "people.db"
    make_people_db(db)
    settings = {
        "name": "people",
        "type": "sql",
        "connection": {"url": f"sqlite:///{db}"},
        "retries": {"max_attempts": 1},
        "circuit_breaker": {"failure_threshold": 2, "reset_timeout": 30},
    }
    library = 'templates:\n  - {id: everyone, description: all people, sql: "SELECT name FROM people"}\n'
    async with started(tmp_path, settings, library) as adapter:
        template = adapter.templates["everyone"]
        assert (await adapter.run(template, {}, cached=False)).rows
        damaged = bytearray(db.read_bytes())  # the schema (page 1) intact, the table's page (2) garbage
        damaged[4096:8192] = os.urandom(4096)
        garbage = tmp_path / "garbage.db"
        garbage.write_bytes(bytes(damaged))
        os.replace(garbage, db)
        for _ in range(2):
            with pytest.raises(SourceUnavailable):
                await adapter.run(template, {}, cached=False)
        assert await adapter.source_health() == {"status": "ok"}  # the ping alone sees nothing wrong
        assert await adapter.health() == {"status": "down", "reason": "circuit open after 2 consecutive failures"}


async def test_duckdb_recovers_when_the_original_file_comes_back_after_a_bad_one(tmp_path):
    """A file that is not a database is moved in (503: it cannot be opened), then the original is moved
    back, with its old inode: the adapter opens it again instead of using the connection it closed (that
    answered 500 'Connection already closed' until a restart; found by a probe of the demo)."""
    import pytest

    from server.errors import SourceUnavailable

    path, settings = duckdb_counting(tmp_path, 3)
    kept = tmp_path / "kept.duckdb"
    async with started(tmp_path, settings, COUNT) as adapter, started(tmp_path, settings, COUNT) as sibling:
        template = adapter.templates["count"]
        assert (await adapter.run(template, {})).rows == [{"n": 3}]
        assert (await sibling.run(template, {})).rows == [{"n": 3}]
        os.replace(path, kept)
        path.write_bytes(os.urandom(300_000))
        with pytest.raises(SourceUnavailable, match="cannot open the database"):
            await adapter.run(template, {})
        os.replace(kept, path)  # the original, under its old inode
        assert (await adapter.run(template, {})).rows == [{"n": 3}]
        assert (await sibling.run(template, {})).rows == [{"n": 3}]  # its connection was dropped too
        assert (await adapter.health())["status"] == (await sibling.health())["status"] == "ok"


async def test_routing_log_write_failures_are_reported_in_health(tmp_path):
    config = BASE_CONFIG + "stats: {flush_interval: 0.05}\n"
    async with running_app(people_tree(tmp_path, config)) as (client, _):
        rlog = client.app[STATS_LOG]
        await client.post("/v1/query", json=QUESTION)
        await rlog.flush()
        healthy = await health(client)
        with rlog.engine.begin() as conn:  # the log's table disappears under the running writer
            conn.execute(sa.text(f"DROP TABLE {rlog.table.name}"))
        for _ in range(3):
            await client.post("/v1/query", json=QUESTION)
        await rlog.flush()
        failing = await health(client)
        status = rlog.status()
    assert healthy["routing_log"] == {"status": "ok", "failed_writes": 0, "dropped": 0, "written": 1}
    assert failing["routing_log"]["status"] == "failing"
    assert failing["routing_log"]["failed_writes"] == 3
    assert status["failed"] == 3 and status["last_write_failed"] is True


async def test_duckdb_file_replaced_under_two_adapters_on_it(tmp_path):
    """DuckDB shares one instance per file in a process (two adapters on one file, or the old and the new
    adapter during a reload): a replaced file is read by both once they reopen, never the old one forever."""
    path, settings = duckdb_counting(tmp_path, 3)
    async with started(tmp_path, settings, COUNT) as one, started(tmp_path, settings, COUNT) as two:
        assert (await one.execute(one.templates["count"], {})).rows == [{"n": 3}]
        replace_with(path, 5)
        assert (await one.execute(one.templates["count"], {})).rows == [{"n": 5}]
        assert (await two.execute(two.templates["count"], {})).rows == [{"n": 5}]
        assert (await one.execute(one.templates["count"], {})).rows == [{"n": 5}]
        assert (await one.health())["status"] == (await two.health())["status"] == "ok"
        # a third adapter opened now shares the new instance and reads the new file
        async with started(tmp_path, settings, COUNT) as three:
            assert (await three.execute(three.templates["count"], {})).rows == [{"n": 5}]


async def test_duckdb_adapter_opened_on_an_instance_of_a_replaced_file_reads_the_new_one(tmp_path):
    """An adapter that starts while another still holds the instance of a file replaced since must not take
    the new file's identity for that stale instance (it would never reopen)."""
    path, settings = duckdb_counting(tmp_path, 3)
    async with started(tmp_path, settings, COUNT) as old:
        replace_with(path, 5)
        async with started(tmp_path, settings, COUNT) as new:
            assert (await new.execute(new.templates["count"], {})).rows == [{"n": 5}]
            assert (await old.execute(old.templates["count"], {})).rows == [{"n": 5}]


async def health_once_mcp_started(client) -> dict:
    """/health once MCP has left `starting` (its SDK loads in the background after the server starts)."""
    import asyncio

    for _ in range(100):
        body = await health(client)
        if body["mcp"]["status"] != "starting":
            return body
        await asyncio.sleep(0.05)
    raise AssertionError("MCP still starting after 5 s")


async def test_mcp_that_could_not_start_makes_the_replica_degraded(tmp_path, monkeypatch):
    """/mcp is how assistants call the server: when the MCP SDK cannot be imported (here: the `mcp`
    package hidden, as on an install that lacks it) /mcp answers 503 and /health says so instead of ok."""
    import sys

    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.") or n == "server.mcp.http_sdk"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    async with running_app(people_tree(tmp_path)) as (client, _):
        body = await health_once_mcp_started(client)
        mcp = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        query = await client.post("/v1/query", json=QUESTION)
    assert body["status"] == "degraded"
    assert body["mcp"] == {"status": "down", "reason": "could not start (ModuleNotFoundError)"}
    assert mcp.status == 503
    assert query.status == 200  # the JSON API is unaffected


async def test_mcp_started_is_ok_in_health_and_down_once_its_session_manager_ends(tmp_path):
    import asyncio
    import contextlib

    from server.mcp.http import MCP

    async with running_app(people_tree(tmp_path)) as (client, _):
        body = await health_once_mcp_started(client)
        assert body["status"] == "ok" and body["mcp"]["status"] == "ok" and body["mcp"]["transport"] == "stateful"
        assert body["mcp"]["sessions"]["open"] == 0 and body["mcp"]["sessions"]["max_sessions"] == 2000
        task = client.app[MCP]._task  # the SDK's session manager ends while the server runs (a crash)
        assert task is not None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        after = await health(client)
        mcp = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert after["status"] == "degraded"
    assert after["mcp"] == {"status": "down", "reason": "the session manager stopped"}
    assert mcp.status == 503

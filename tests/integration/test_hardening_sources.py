"""A failing query is 502 `query_failed`; only a source that cannot be used is 503. No driver text leaks.

Checked on every SQL backend: SQLite and DuckDB through the HTTP app, PostgreSQL and MariaDB through the
adapter (the HTTP mapping of the error classes is the same for all).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3

import duckdb
import pytest

from server.errors import QueryFailed, SourceUnavailable
from server.testing.adapter_harness import started
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree
from server.testing.servers import free_port

GHOSTS = """
  - id: ghosts_in_the_attic
    description: List the ghosts that haunt the attic
    nl_examples: ["list the ghosts in the attic", "which ghosts haunt the attic?"]
    sql: "SELECT name FROM ghosts ORDER BY name"
"""
MISSING_LIBRARY = """
templates:
  - id: ghosts_in_the_attic
    description: List the ghosts that haunt the attic
    sql: "SELECT name FROM ghosts ORDER BY name"
"""
DUCK_ADAPTER = """
adapters:
  - name: sales
    type: duckdb
    connection: {path: templates/sales.duckdb}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.3
"""
DRIVER_WORDS = ("no such", "ghosts", "catalog", "does not exist", "doesn't exist", "sqlite", "duckdb error", "line 1")


def assert_clean(message: str) -> None:
    lowered = message.lower()
    assert not [w for w in DRIVER_WORDS if w in lowered], message


def make_duckdb(path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people AS SELECT 'Ada' AS name, 'Engineering' AS department, 120000 AS salary")
    con.execute("CREATE TABLE big AS SELECT range AS n, md5(range::VARCHAR) AS s FROM range(2000000)")
    con.close()


def with_ghosts(path, kind: str) -> None:
    """The database with a `ghosts` table as well."""
    if kind == "sqlite":
        with contextlib.closing(sqlite3.connect(path)) as con:
            con.execute("CREATE TABLE ghosts (name TEXT)")
            con.commit()
        return
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE ghosts (name VARCHAR)")
    con.close()


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_missing_table_is_502_query_failed_over_http(tmp_path, kind):
    """The table is there when the config loads (a load checks every template against its database) and
    gone when the question comes: the file was replaced by one without it."""
    databases = {"sqlite": tmp_path / "templates" / "people.db", "duckdb": tmp_path / "templates" / "sales.duckdb"}
    make_people_db(databases["sqlite"])
    make_duckdb(databases["duckdb"])
    database = databases[kind]
    without = database.with_name("without_ghosts" + database.suffix)
    shutil.copy(database, without)
    with_ghosts(database, kind)
    adapter, name = (PEOPLE_ADAPTER, "people") if kind == "sqlite" else (DUCK_ADAPTER, "sales")
    tree = make_tree(tmp_path, BASE_CONFIG, {"a.yaml": adapter}, {"people/people.yaml": PEOPLE_LIBRARY + GHOSTS})
    async with running_app(tree) as (client, _):
        os.replace(without, database)
        resp = await client.post("/v1/query", json={"query": "list the ghosts in the attic", "adapter": name})
        body = await resp.json()
    assert resp.status == 502, body
    assert body["error"] == {
        "code": "query_failed",
        "message": f"adapter '{name}': template 'ghosts_in_the_attic' failed to run",
    }


async def test_duckdb_file_cut_short_under_the_open_connection_is_503(tmp_path):
    path = tmp_path / "sales.duckdb"
    make_duckdb(path)
    library = 'templates:\n  - {id: total, description: sum, sql: "SELECT sum(length(s)) AS n FROM big"}\n'
    settings = {"name": "sales", "type": "duckdb", "connection": {"path": str(path)}}
    async with started(tmp_path, settings, library) as adapter:
        with path.open("r+b") as f:
            f.truncate(4096)
        with pytest.raises(SourceUnavailable) as caught:
            await adapter.execute(adapter.templates["total"], {})
    assert caught.value.status == 503
    assert caught.value.message == "adapter 'sales': the database cannot be read"


async def test_postgres_missing_table_is_502_and_unreachable_is_503(tmp_path, pg_database):
    settings = {"name": "pg", "type": "sql", "connection": {"url": pg_database.url}}
    async with started(tmp_path, settings, MISSING_LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as caught:
            await adapter.execute(adapter.templates["ghosts_in_the_attic"], {})
    assert caught.value.status == 502
    assert caught.value.message == "adapter 'pg': template 'ghosts_in_the_attic' failed to run"
    down = {"name": "pg", "type": "sql", "connection": {"url": f"postgresql+psycopg://x@127.0.0.1:{free_port()}/x"}}
    async with started(tmp_path, down, MISSING_LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as unreachable:
            await adapter.execute(adapter.templates["ghosts_in_the_attic"], {})
    assert unreachable.value.status == 503
    assert_clean(unreachable.value.message)


async def test_mariadb_missing_table_is_502(tmp_path, mariadb_database):
    settings = {"name": "shop", "type": "sql", "connection": {"url": mariadb_database.url}}
    async with started(tmp_path, settings, MISSING_LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as caught:
            await adapter.execute(adapter.templates["ghosts_in_the_attic"], {})
    assert caught.value.status == 502
    assert caught.value.message == "adapter 'shop': template 'ghosts_in_the_attic' failed to run"


async def test_a_duckdb_file_missing_at_start_is_a_down_source_until_it_appears(tmp_path):
    """As a SQLite file: the server starts (the adapter down, its templates unchecked), answers 503 naming
    the adapter, and the first question after the file appears is answered from it."""
    database = tmp_path / "templates" / "sales.duckdb"
    tree = make_tree(tmp_path, BASE_CONFIG, {"a.yaml": DUCK_ADAPTER}, {"people/people.yaml": PEOPLE_LIBRARY})
    async with running_app(tree) as (client, _):
        health = await (await client.get("/health")).json()
        assert health["adapters"]["sales"]["status"] == "down"
        assert health["adapters"]["sales"]["reason"] == "database file not found"
        question = {"query": "who works in the Engineering department?", "adapter": "sales"}
        resp = await client.post("/v1/query", json=question)
        body = await resp.json()
        assert resp.status == 503 and body["error"]["message"] == "adapter 'sales': database file not found"
        make_duckdb(database)
        resp = await client.post("/v1/query", json=question)
        assert resp.status == 200 and (await resp.json())["rows"] == [{"name": "Ada"}]


async def test_a_duckdb_file_that_is_no_database_at_start_is_a_down_source_not_a_failed_start(tmp_path):
    """Garbage where the database should be: the other adapters serve, this one answers 503 naming itself and
    health says why, and a good file put in its place is read by the next question."""
    database = tmp_path / "templates" / "sales.duckdb"
    tree = make_tree(tmp_path, BASE_CONFIG, {"a.yaml": DUCK_ADAPTER}, {"people/people.yaml": PEOPLE_LIBRARY})
    database.write_bytes(bytes(range(256)) * 1200)
    async with running_app(tree) as (client, _):
        health = await (await client.get("/health")).json()
        sales = health["adapters"]["sales"]
        assert (sales["status"], sales["reason"]) == ("down", "cannot open the database")
        question = {"query": "who works in the Engineering department?", "adapter": "sales"}
        resp = await client.post("/v1/query", json=question)
        body = await resp.json()
        assert resp.status == 503 and body["error"]["message"] == "adapter 'sales': cannot open the database"
        database.unlink()
        make_duckdb(database)
        resp = await client.post("/v1/query", json=question)
        assert resp.status == 200 and (await resp.json())["rows"] == [{"name": "Ada"}]


async def test_a_closed_duckdb_adapter_opens_nothing_again(tmp_path):
    """A request still running on a retired runtime must not reopen the file on an adapter nobody closes."""
    path = tmp_path / "sales.duckdb"
    make_duckdb(path)
    library = 'templates:\n  - {id: people, description: people, sql: "SELECT name FROM people"}\n'
    settings = {"name": "sales", "type": "duckdb", "connection": {"path": str(path)}}
    async with started(tmp_path, settings, library) as adapter:
        await adapter.close_source()
        with pytest.raises(SourceUnavailable) as caught:
            await adapter.execute(adapter.templates["people"], {})
        assert caught.value.message == "adapter 'sales': adapter is not started"
        assert adapter._conn is None

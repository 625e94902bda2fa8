"""Benchmark: what one query costs end to end per adapter type against loopback servers.

End to end = adapter.execute(template, params): parameter rendering, the pooled client's round trip, the
server's work and mapping the reply to JSON-clean rows. Each adapter runs the shipped example templates
(config/adapters/examples.yaml) against the same loopback servers the tests use (PostgreSQL and MariaDB
where reachable, SecantusDB in-process, aiohttp JSON API, strawberry GraphQL, Elasticsearch stand-in),
plus SQLite and DuckDB on small local files. Prints one JSON line per adapter, then a summary line.

Usage (from the repo root): python scripts/bench_adapters.py [--rounds 200] [--warmup 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb

from server.adapters.base import AdapterContext
from server.adapters.registry import registry
from server.templates.library import load_library
from server.testing import configs, mariadb, pg
from server.testing.es_standin import running_es_standin
from server.testing.examples import PARAMS, example_adapter
from server.testing.graphql_api import running_graphql_api
from server.testing.http_api import running_http_api
from server.testing.mongo import running_mongo

REPO = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def bench(adapter, calls: list[tuple[Any, dict[str, Any]]], rounds: int, warmup: int) -> dict[str, Any]:
    await adapter.start()
    try:
        for i in range(warmup):
            template, params = calls[i % len(calls)]
            await adapter.execute(template, params)
        times = []
        for i in range(rounds):
            template, params = calls[i % len(calls)]
            started = time.perf_counter()
            await adapter.execute(template, params)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await adapter.close()
    return {
        "queries": rounds,
        "templates": len(calls),
        "median_ms": round(statistics.median(times), 3),
        "p95_ms": round(percentile(times, 0.95), 3),
        "min_ms": round(min(times), 3),
    }


def example(name: str, connection: dict[str, Any]):
    adapter, templates = example_adapter(name, connection)
    return adapter, [(t, PARAMS[name][t.id]) for t in templates]


def local_adapter(root: Path, kind: str):
    """SQLite (the people test database) and DuckDB (a small orders file) for comparison."""
    if kind == "sql":
        configs.make_people_db(root / "people.db")
        settings = {"name": "sqlite", "type": "sql", "connection": {"url": f"sqlite:///{root / 'people.db'}"}}
        library, params = (
            configs.PEOPLE_LIBRARY,
            {
                "people_in_department": {"department": "Engineering"},
                "headcount_by_department": {},
                "person_by_name": {"name": "Ada"},
            },
        )
    else:
        con = duckdb.connect(str(root / "orders.duckdb"))
        con.execute(
            "CREATE TABLE orders AS SELECT i AS id, ['North','South','East'][i % 3 + 1] AS region, "
            "i * 1.5 AS amount FROM range(1000) t(i)"
        )
        con.close()
        settings = {"name": "duckdb", "type": "duckdb", "connection": {"path": str(root / "orders.duckdb")}}
        library = (
            "templates:\n  - id: revenue\n    description: revenue by region\n"
            '    sql: "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region ORDER BY region"\n'
        )
        params = {"revenue": {}}
    path = root / f"{kind}.yaml"
    path.write_text(library)
    cls = registry.get(settings["type"])
    loaded = load_library([str(path)], root, cls.body_key, cls.parse_body, settings["name"])
    model = cls.settings_model.model_validate({"templates": [str(path)], **settings})
    adapter = cls(model, AdapterContext(root=root, templates={t.id: t for t in loaded.templates}))
    return adapter, [(t, params[t.id]) for t in loaded.templates]


@contextlib.contextmanager
def pg_url():
    """The URL of a seeded schema on the local PostgreSQL server, or None when there is no server."""
    url = pg.reachable_url()
    if url is None:
        yield None
        return
    with pg.seeded_schema(url, prefix="ir_bench") as database:
        yield database.url


@contextlib.contextmanager
def mariadb_url():
    """The URL of a seeded database on the local MariaDB server, or None when there is no server."""
    base = mariadb.reachable_url()
    if base is None:
        yield None
        return
    with mariadb.seeded_database(base, prefix="ir_bench") as database:
        yield database.url


async def run(rounds: int, warmup: int) -> list[dict[str, Any]]:
    results = []

    async def record(label: str, kind: str, made) -> None:
        adapter, calls = made
        figures = await bench(adapter, calls, rounds, warmup)
        results.append({"adapter": label, "type": kind, **figures})
        print(json.dumps(results[-1]), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        await record("sqlite", "sql", local_adapter(root, "sql"))
        await record("duckdb", "duckdb", local_adapter(root, "duckdb"))
    with pg_url() as url:
        if url is None:
            print(json.dumps({"adapter": "inventory_pg", "skipped": "no PostgreSQL on 127.0.0.1:5432"}))
        else:
            await record("inventory_pg", "sql/postgresql", example("inventory_pg", {"url": url}))
    with mariadb_url() as url:
        if url is None:
            print(json.dumps({"adapter": "inventory_mariadb", "skipped": "no MariaDB on 127.0.0.1:3306"}))
        else:
            await record("inventory_mariadb", "sql/mariadb", example("inventory_mariadb", {"url": url}))
    with running_mongo(prefix="ir_bench") as mongo:
        await record("cars", "mongodb (SecantusDB)", example("cars", {"url": mongo.url, "database": mongo.database}))
    async with running_es_standin() as es:
        await record(
            "support_tickets",
            "elasticsearch (stand-in)",
            example("support_tickets", {"url": es.url, "api_key_env": None}),
        )
    async with running_http_api() as api:
        await record("books", "http", example("books", {"url": api.url, "auth": None}))
    async with running_graphql_api() as api:
        await record("flights", "graphql", example("flights", {"url": api.url}))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    results = asyncio.run(run(args.rounds, args.warmup))
    print(json.dumps({"summary": {r["adapter"]: r["median_ms"] for r in results}, "rounds": args.rounds}))


if __name__ == "__main__":
    main()

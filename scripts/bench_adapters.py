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
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb
import yaml

from server.adapters.base import AdapterContext
from server.adapters.registry import registry
from server.templates.library import load_library
from tests.integration.test_adapter_examples import PARAMS
from tests.support import configs
from tests.support.es_standin import running_es_standin
from tests.support.graphql_api import running_graphql_api
from tests.support.http_api import running_http_api
from tests.support.mongo import seed_cars, start_secantus
from tests.support.pg import split_statements

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


def example_adapter(name: str, connection: dict[str, Any]):
    raw = next(
        a for a in yaml.safe_load((REPO / "config/adapters/examples.yaml").read_text())["adapters"] if a["name"] == name
    )
    cls = registry.get(raw["type"])
    library = load_library(raw["templates"], REPO, cls.body_key, cls.parse_body, name)
    settings = cls.settings_model.model_validate(
        {**raw, "enabled": True, "connection": {**raw["connection"], **connection}}
    )
    adapter = cls(settings, AdapterContext(root=REPO, templates={t.id: t for t in library.templates}))
    return adapter, [(t, PARAMS[name][t.id]) for t in library.templates]


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
def pg_schema():
    import psycopg

    schema = f"ir_bench_{uuid.uuid4().hex[:8]}"
    try:
        conn = psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True, connect_timeout=2)
    except psycopg.Error:
        yield None
        return
    with conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in split_statements((REPO / "templates/inventory_pg/seed.sql").read_text()):
            conn.execute(statement)
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:5432/test?options=-csearch_path%3D{schema}"
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextlib.contextmanager
def mariadb_database():
    import pymysql

    name = f"ir_bench_{uuid.uuid4().hex[:8]}"
    try:
        conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", autocommit=True, connect_timeout=2)
    except pymysql.Error:
        yield None
        return
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
        cur.execute(f"USE `{name}`")
        for statement in split_statements((REPO / "templates/inventory_mariadb/seed.sql").read_text()):
            cur.execute(statement)
    try:
        yield f"mysql+pymysql://root@127.0.0.1:3306/{name}?charset=utf8mb4"
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{name}`")
        conn.close()


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
    with pg_schema() as url:
        if url is None:
            print(json.dumps({"adapter": "inventory_pg", "skipped": "no PostgreSQL on 127.0.0.1:5432"}))
        else:
            await record("inventory_pg", "sql/postgresql", example_adapter("inventory_pg", {"url": url}))
    with mariadb_database() as url:
        if url is None:
            print(json.dumps({"adapter": "inventory_mariadb", "skipped": "no MariaDB on 127.0.0.1:3306"}))
        else:
            await record("inventory_mariadb", "sql/mariadb", example_adapter("inventory_mariadb", {"url": url}))
    server = start_secantus()
    try:
        url = f"mongodb://127.0.0.1:{server.port}/?directConnection=true"
        seed_cars(url, "bench")
        await record("cars", "mongodb (SecantusDB)", example_adapter("cars", {"url": url, "database": "bench"}))
    finally:
        server.stop()
    async with running_es_standin() as es:
        await record(
            "support_tickets",
            "elasticsearch (stand-in)",
            example_adapter("support_tickets", {"url": es.url, "api_key_env": None}),
        )
    async with running_http_api() as api:
        await record("books", "http", example_adapter("books", {"url": api.url, "auth": None}))
    async with running_graphql_api() as api:
        await record("flights", "graphql", example_adapter("flights", {"url": api.url}))
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

"""Load the example data sets into the servers the example adapters (config/adapters/examples.yaml) query.

The data lives next to the template libraries (templates/<name>/seed.sql or *.json) so that the tests
seed their loopback servers from the same files. Each command replaces only the example's own objects:
a PostgreSQL schema, a MariaDB database, a MongoDB collection or an Elasticsearch index.

Usage (from the repo root):
  python scripts/seed_examples.py postgres [--url postgresql://postgres@127.0.0.1:5432/test] [--schema inventory]
  python scripts/seed_examples.py mariadb [--url mysql://root@127.0.0.1:3306] [--database inventory]
  python scripts/seed_examples.py mongodb [--url mongodb://127.0.0.1:27017/?directConnection=true] [--database examples]
  python scripts/seed_examples.py elasticsearch [--url http://127.0.0.1:9200] (API key from TICKETS_ES_API_KEY)
The books (HTTP) and flights (GraphQL) examples are served by scripts/serve_example_apis.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def statements(path: Path) -> list[str]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def identifier(name: str) -> str:
    if not _IDENT.match(name):
        raise SystemExit(f"not a plain identifier: {name!r}")
    return name


def seed_postgres(url: str, schema: str) -> dict:
    import psycopg

    schema = identifier(schema)
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in statements(TEMPLATES / "inventory_pg" / "seed.sql"):
            conn.execute(statement)
        count = conn.execute("SELECT count(*) FROM products").fetchone()[0]
    return {"postgres_schema": schema, "products": count}


def seed_mariadb(url: str, database: str) -> dict:
    import pymysql

    database = identifier(database)
    u = urlparse(url.replace("mysql+pymysql://", "mysql://"))
    conn = pymysql.connect(
        host=u.hostname or "127.0.0.1",
        port=u.port or 3306,
        user=u.username or "root",
        password=u.password or "",
        autocommit=True,
    )
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        cur.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
        cur.execute(f"USE `{database}`")
        for statement in statements(TEMPLATES / "inventory_mariadb" / "seed.sql"):
            cur.execute(statement)
        cur.execute("SELECT COUNT(*) FROM products")
        count = cur.fetchone()[0]
    conn.close()
    return {"mariadb_database": database, "products": count}


def seed_mongodb(url: str, database: str) -> dict:
    from pymongo import MongoClient

    cars = json.loads((TEMPLATES / "cars" / "cars.json").read_text(encoding="utf-8"))
    with MongoClient(url, serverSelectionTimeoutMS=5000) as client:
        coll = client[database]["cars"]
        coll.drop()
        coll.insert_many(cars)
        return {"mongodb_database": database, "cars": coll.count_documents({})}


def seed_elasticsearch(url: str) -> dict:
    from elasticsearch import Elasticsearch

    tickets = json.loads((TEMPLATES / "support_tickets" / "tickets.json").read_text(encoding="utf-8"))
    key = os.environ.get("TICKETS_ES_API_KEY") or None
    with Elasticsearch(url, api_key=key) as es:
        es.options(ignore_status=404).indices.delete(index="tickets")
        es.indices.create(
            index="tickets",
            mappings={
                "properties": {
                    "id": {"type": "keyword"},
                    "title": {"type": "text"},
                    "product": {"type": "keyword"},
                    "priority": {"type": "keyword"},
                    "status": {"type": "keyword"},
                    "hours": {"type": "integer"},
                }
            },
        )
        for ticket in tickets:
            es.index(index="tickets", id=ticket["id"], document=ticket)
        es.indices.refresh(index="tickets")
        return {"elasticsearch_index": "tickets", "tickets": es.count(index="tickets")["count"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="target", required=True)
    p = sub.add_parser("postgres")
    p.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/test")
    p.add_argument("--schema", default="inventory")
    m = sub.add_parser("mariadb")
    m.add_argument("--url", default="mysql://root@127.0.0.1:3306")
    m.add_argument("--database", default="inventory")
    g = sub.add_parser("mongodb")
    g.add_argument("--url", default="mongodb://127.0.0.1:27017/?directConnection=true")
    g.add_argument("--database", default="examples")
    e = sub.add_parser("elasticsearch")
    e.add_argument("--url", default="http://127.0.0.1:9200")
    args = parser.parse_args(argv)
    if args.target == "postgres":
        result = seed_postgres(args.url, args.schema)
    elif args.target == "mariadb":
        result = seed_mariadb(args.url, args.database)
    elif args.target == "mongodb":
        result = seed_mongodb(args.url, args.database)
    else:
        result = seed_elasticsearch(args.url)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PostgreSQL for tests and benchmarks: the server on 127.0.0.1:5432 (CI and this machine), a fresh schema
per run, seeded from templates/inventory_pg/seed.sql and dropped afterwards.

IR_TEST_PG_URL overrides the address (a SQLAlchemy URL without a schema).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

SEED = Path(__file__).resolve().parents[2] / "templates" / "inventory_pg" / "seed.sql"
CANDIDATES = ["postgresql+psycopg://postgres@127.0.0.1:5432/test", "postgresql+psycopg://root@127.0.0.1:5432/test"]
WHAT = "PostgreSQL on 127.0.0.1:5432 (database 'test', trust auth)"
INSTALL = "install postgresql (apt-get install postgresql) or set IR_TEST_PG_URL"


@dataclass
class PgDatabase:
    url: str  # with search_path set to the run's schema
    admin_url: str
    schema: str


def split_statements(sql: str) -> list[str]:
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def reachable_url() -> str | None:
    """The first candidate URL (or IR_TEST_PG_URL) a connection succeeds on; None when there is none."""
    import psycopg

    for url in [os.environ["IR_TEST_PG_URL"]] if "IR_TEST_PG_URL" in os.environ else CANDIDATES:
        try:
            with psycopg.connect(_dsn(url), connect_timeout=2):
                return url
        except psycopg.Error:
            continue
    return None


@contextmanager
def seeded_schema(url: str, prefix: str = "ir_test") -> Iterator[PgDatabase]:
    """A new schema on the server at `url` holding the example inventory data; dropped on exit."""
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in split_statements(SEED.read_text()):
            conn.execute(statement)
    try:
        yield PgDatabase(url=f"{url}?options={quote(f'-csearch_path={schema}')}", admin_url=url, schema=schema)
    finally:
        with psycopg.connect(_dsn(url), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

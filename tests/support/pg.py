"""PostgreSQL for tests: the server on 127.0.0.1:5432 (CI and this machine), a fresh schema per run.

IR_TEST_PG_URL overrides the address (a SQLAlchemy URL without a schema). The schema is seeded from
templates/inventory_pg/seed.sql and dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from .servers import missing

SEED = Path(__file__).resolve().parents[2] / "templates" / "inventory_pg" / "seed.sql"
CANDIDATES = ["postgresql+psycopg://postgres@127.0.0.1:5432/test", "postgresql+psycopg://root@127.0.0.1:5432/test"]


@dataclass
class PgDatabase:
    url: str  # with search_path set to the run's schema
    admin_url: str
    schema: str


def split_statements(sql: str) -> list[str]:
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _reachable_url() -> str | None:
    import psycopg

    for url in [os.environ["IR_TEST_PG_URL"]] if "IR_TEST_PG_URL" in os.environ else CANDIDATES:
        dsn = url.replace("postgresql+psycopg://", "postgresql://")
        try:
            with psycopg.connect(dsn, connect_timeout=2):
                return url
        except psycopg.Error:
            continue
    return None


@pytest.fixture(scope="session")
def pg_database() -> Iterator[PgDatabase]:
    import psycopg

    url = _reachable_url()
    if url is None:
        missing(
            "PostgreSQL on 127.0.0.1:5432 (database 'test', trust auth)",
            "install postgresql (apt-get install postgresql) or set IR_TEST_PG_URL",
        )
    schema = f"ir_test_{uuid.uuid4().hex[:10]}"
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in split_statements(SEED.read_text()):
            conn.execute(statement)
    try:
        yield PgDatabase(url=f"{url}?options={quote(f'-csearch_path={schema}')}", admin_url=url, schema=schema)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

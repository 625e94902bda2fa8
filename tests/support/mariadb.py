"""MariaDB/MySQL for tests: the server on 127.0.0.1:3306 (root, empty password), a fresh database per run.

IR_TEST_MYSQL_URL overrides the address (a SQLAlchemy URL without a database). The database is seeded
from templates/inventory_mariadb/seed.sql and dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .pg import split_statements
from .servers import missing

SEED = Path(__file__).resolve().parents[2] / "templates" / "inventory_mariadb" / "seed.sql"
DEFAULT = "mysql+pymysql://root@127.0.0.1:3306"


@dataclass
class MariaDatabase:
    url: str
    database: str


def _connect(url: str, database: str | None = None):
    import pymysql
    from sqlalchemy.engine import make_url

    u = make_url(url)
    return pymysql.connect(
        host=u.host or "127.0.0.1",
        port=u.port or 3306,
        user=u.username or "root",
        password=u.password or "",
        database=database,
        connect_timeout=2,
        autocommit=True,
    )


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[MariaDatabase]:
    import pymysql

    base = os.environ.get("IR_TEST_MYSQL_URL", DEFAULT).rstrip("/")
    try:
        _connect(base).close()
    except pymysql.Error:
        missing(
            "MariaDB/MySQL on 127.0.0.1:3306 (root, empty password)",
            "install mariadb-server (apt-get install mariadb-server) or set IR_TEST_MYSQL_URL",
        )
    database = f"ir_test_{uuid.uuid4().hex[:10]}"
    conn = _connect(base)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
        cur.execute(f"USE `{database}`")
        for statement in split_statements(SEED.read_text()):
            cur.execute(statement)
    conn.close()
    try:
        yield MariaDatabase(url=f"{base}/{database}?charset=utf8mb4", database=database)
    finally:
        conn = _connect(base)
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{database}`")
        conn.close()

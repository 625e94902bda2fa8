"""MariaDB/MySQL for tests and benchmarks: the server on 127.0.0.1:3306 (root, empty password), a fresh
database per run, seeded from templates/inventory_mariadb/seed.sql and dropped afterwards.

IR_TEST_MYSQL_URL overrides the address (a SQLAlchemy URL without a database).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pg import split_statements

SEED = Path(__file__).resolve().parents[2] / "templates" / "inventory_mariadb" / "seed.sql"
DEFAULT = "mysql+pymysql://root@127.0.0.1:3306"
WHAT = "MariaDB/MySQL on 127.0.0.1:3306 (root, empty password)"
INSTALL = "install mariadb-server (apt-get install mariadb-server) or set IR_TEST_MYSQL_URL"


@dataclass
class MariaDatabase:
    url: str
    database: str


def _connect(url: str, database: str | None = None) -> Any:
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


def reachable_url() -> str | None:
    """IR_TEST_MYSQL_URL or the default server URL (without a database) when it accepts a connection."""
    import pymysql

    base = os.environ.get("IR_TEST_MYSQL_URL", DEFAULT).rstrip("/")
    try:
        _connect(base).close()
    except pymysql.Error:
        return None
    return base


@contextmanager
def seeded_database(base: str, prefix: str = "ir_test") -> Iterator[MariaDatabase]:
    """A new database on the server at `base` holding the example inventory data; dropped on exit."""
    database = f"{prefix}_{uuid.uuid4().hex[:10]}"
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

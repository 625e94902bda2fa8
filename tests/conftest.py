"""Fixtures shared across the suite. The helpers behind them (servers, stand-ins, config trees) live in
`server.testing`, so that scripts and benchmarks use the same ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.embedding.factory import shared_minilm
from server.embedding.minilm import MiniLMEmbedder
from server.testing import mariadb, mongo, pg, redis_server
from server.testing.servers import missing


@pytest.fixture(scope="session")
def pg_database() -> Iterator[pg.PgDatabase]:
    """A schema of its own on the PostgreSQL server, seeded with the example inventory, for the whole run."""
    url = pg.reachable_url()
    if url is None:
        missing(pg.WHAT, pg.INSTALL)
    with pg.seeded_schema(url) as database:
        yield database


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[mariadb.MariaDatabase]:
    """A database of its own on the MariaDB server, seeded with the example inventory, for the whole run."""
    base = mariadb.reachable_url()
    if base is None:
        missing(mariadb.WHAT, mariadb.INSTALL)
    with mariadb.seeded_database(base) as database:
        yield database


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis server on 127.0.0.1:6379 (started if it is installed but not running)."""
    return redis_server.ensure_redis()


@pytest.fixture(scope="session")
def mongo_server() -> Iterator[mongo.MongoServer]:
    """SecantusDB on loopback with the example cars, for the whole run."""
    try:
        running = mongo.running_mongo()
        server = running.__enter__()
    except ImportError:
        missing(mongo.WHAT, mongo.INSTALL)
    try:
        yield server
    finally:
        running.__exit__(None, None, None)


@pytest.fixture(scope="session")
def minilm_embedder(tmp_path_factory: pytest.TempPathFactory) -> MiniLMEmbedder:
    """The bundled MiniLM model behind a plain embedder (no cache), loaded once per run."""
    return MiniLMEmbedder(shared_minilm(tmp_path_factory.mktemp("models")))

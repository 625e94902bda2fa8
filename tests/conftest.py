"""Fixtures shared across the suite. The helpers behind them (servers, stand-ins, config trees) live in
`server.testing`, so that scripts and benchmarks use the same ones."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from server.embedding.factory import shared_minilm
from server.embedding.minilm import MiniLMEmbedder
from server.testing import mariadb, mongo, pg, redis_server
from server.testing.servers import missing

JAX_CACHE_ENV = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}
_JAX_CACHE = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """One JAX compilation cache for the run, before any test imports JAX: the suite's tiny tunes (in this
    process and in the `tune-encoder` children it starts, which inherit the environment) load the steps an
    earlier tune of the same shapes compiled instead of compiling them again, most of a tiny tune's time."""
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
        config.stash[_JAX_CACHE] = folder = tempfile.mkdtemp(prefix="jax-cache-")
        os.environ |= {"JAX_COMPILATION_CACHE_DIR": folder, **JAX_CACHE_ENV}


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_JAX_CACHE, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


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

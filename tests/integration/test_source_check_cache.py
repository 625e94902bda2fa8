"""Bodies a DuckDB or SQLite file accepted are not asked again by the next start (issue 34, accepted_bodies.py).

A warm start at 5,000 templates spent 2.2 s on one DESCRIBE per template, for bodies and a database that
had not changed. The acceptance is kept under the database file's identity: a changed file, a changed
body or a damaged cache file means asking the database again, with the same error as without the cache."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path

import duckdb
import pytest

from server.adapters.accepted_bodies import FILE
from server.config.errors import ConfigError
from server.routing.routable import RoutingSource
from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_tree, people_tree

ADAPTER = """
adapters:
  - name: people
    type: duckdb
    connection: {path: templates/people.duckdb}
    templates: ["templates/people/*.yaml"]
"""


def people_duckdb(path: Path, name_column: str = "name") -> None:
    path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE people (id INTEGER, {name_column} VARCHAR, department VARCHAR, salary DOUBLE)")
    con.execute("INSERT INTO people VALUES (1, 'Ada', 'Engineering', 120000)")
    con.close()


def tree(root: Path) -> Path:
    people_duckdb(root / "templates" / "people.duckdb")
    return make_tree(root, BASE_CONFIG, {"people.yaml": ADAPTER}, {"people/people.yaml": PEOPLE_LIBRARY})


async def started(config: Path) -> tuple[int, int]:
    """(bodies answered from the cache, bodies asked) by one build of the runtime."""
    async with running_runtime(config) as runtime:
        source = runtime.adapters["people"]
        assert isinstance(source, RoutingSource)
        accepted = source.adapter.context.accepted_bodies
        assert source.adapter.source_check is not None and source.adapter.source_check.status == "checked"
        return accepted.hits, accepted.asked


async def refusal(config: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        await build_runtime(load_config(config))
    return "\n".join(f"{i.file}:{i.line}: {i.key}: {i.message}" for i in caught.value.issues)


async def test_a_warm_start_asks_the_database_nothing_it_accepted_before(tmp_path):
    config = tree(tmp_path)
    assert await started(config) == (0, 3)
    assert (tmp_path / "data" / "config_cache" / FILE).is_file()
    assert await started(config) == (3, 0)


async def test_a_changed_database_file_is_asked_again_and_refuses_as_without_the_cache(tmp_path):
    config = tree(tmp_path)
    assert await started(config) == (0, 3)
    db = tmp_path / "templates" / "people.duckdb"
    people_duckdb(db, name_column="full_name")  # the same path, another schema
    cached = await refusal(config)
    (tmp_path / "data" / "config_cache" / FILE).unlink()
    assert await refusal(config) == cached
    assert "templates[id=people_in_department].sql: people (duckdb) refuses it: Binder Error" in cached
    assert '"name" not found' in cached


async def test_a_file_rewritten_in_place_with_the_same_size_and_time_is_still_asked_again(tmp_path):
    """DuckDB writes in place (same inode, same size here) and the modification time is put back: the
    change time (which no one can set) still tells."""
    config = tree(tmp_path)
    db = tmp_path / "templates" / "people.duckdb"
    assert await started(config) == (0, 3)
    before = os.stat(db)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE people RENAME COLUMN name TO full_name")
    con.close()
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "refuses it" in await refusal(config)


async def test_a_changed_body_is_asked_again(tmp_path):
    config = tree(tmp_path)
    assert await started(config) == (0, 3)
    library = tmp_path / "templates" / "people" / "people.yaml"
    text = library.read_text()
    library.write_text(text.replace("SELECT name, department, salary", "SELECT nmae, department, salary"))
    found = await refusal(config)
    assert found.startswith("templates/people/people.yaml:")
    assert "templates[id=person_by_name].sql: people (duckdb) refuses it: Binder Error" in found
    library.write_text(library.read_text().replace("SELECT nmae,", "SELECT name,"))
    assert await started(config) == (2, 1)  # the refused start kept only what it used: the fix is asked once
    assert await started(config) == (3, 0)


async def test_a_damaged_cache_file_is_ignored_logged_and_rebuilt(tmp_path, caplog):
    config = tree(tmp_path)
    assert await started(config) == (0, 3)
    cache = tmp_path / "data" / "config_cache" / FILE
    cache.write_bytes(b'{"format": "accepted-bodies/1", "keys": [tr')
    with caplog.at_level(logging.WARNING, logger="server.adapters.accepted_bodies"):
        assert await started(config) == (0, 3)
    assert any("source check cache" in r.getMessage() and "ignored" in r.getMessage() for r in caplog.records)
    assert await started(config) == (3, 0)


async def test_a_start_keeps_only_the_acceptances_it_used(tmp_path):
    config = tree(tmp_path)
    assert await started(config) == (0, 3)
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text().replace("ORDER BY name", "ORDER BY name DESC"))
    assert await started(config) == (2, 1)
    stored = json.loads((tmp_path / "data" / "config_cache" / FILE).read_text())
    assert len(stored["keys"]) == 3  # the old body's acceptance is gone


async def test_a_sqlite_file_is_not_asked_again_until_it_changes(tmp_path):
    config = people_tree(tmp_path)
    assert await started(config) == (0, 3)
    assert await started(config) == (3, 0)
    con = sqlite3.connect(tmp_path / "templates" / "people.db")
    con.execute("ALTER TABLE people RENAME COLUMN department TO team")
    con.commit()
    con.close()
    cached = await refusal(config)
    assert "templates[id=people_in_department].sql: people (sqlite) refuses it: no such column: department" in cached
    (tmp_path / "data" / "config_cache" / FILE).unlink()
    assert await refusal(config) == cached

"""Values reach SQL only as driver binds: hostile strings are inert, the table survives."""

from __future__ import annotations

import sqlite3

import pytest

from server.testing.app import running_runtime
from server.testing.configs import people_tree

HOSTILE = ["'; DROP TABLE people; --", "Ada' OR '1'='1", 'Ada"; DELETE FROM people; --', "\x00Ada", "😀' --"]


@pytest.mark.parametrize("value", HOSTILE)
async def test_hostile_values_are_inert(tmp_path, value):
    async with running_runtime(people_tree(tmp_path)) as runtime:
        adapter = runtime.get("people").adapter
        result = await adapter.execute(adapter.templates["person_by_name"], {"name": value})
        assert result.rows == []
    con = sqlite3.connect(tmp_path / "templates" / "people.db")
    assert con.execute("SELECT count(*) FROM people").fetchone() == (4,)


async def test_sqlite_is_opened_read_only(tmp_path):
    async with running_runtime(people_tree(tmp_path)) as runtime:
        adapter = runtime.get("people").adapter
        engine = adapter._engine
        with engine.connect() as conn, pytest.raises(Exception, match=r"readonly|read-only|query_only"):
            conn.exec_driver_sql("DELETE FROM people")


async def test_row_cap_truncates(tmp_path):
    config_dir = people_tree(tmp_path)
    adapters = config_dir / "adapters" / "people.yaml"
    adapters.write_text(adapters.read_text() + "    max_rows: 2\n")
    async with running_runtime(config_dir) as runtime:
        adapter = runtime.get("people").adapter
        result = await adapter.execute(adapter.templates["headcount_by_department"], {})
        assert len(result.rows) == 2 and result.truncated

"""One answer per named value on a small SQLite source: the adapter's `max_rows` caps the whole answer,
shared among the values, and a value without rows is said."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.service import answer as answering
from server.testing.configs import PEOPLE_ADAPTER, people_tree

pytestmark = pytest.mark.asyncio


async def test_max_rows_caps_the_whole_answer_and_a_value_without_rows_is_said(tmp_path):
    config = people_tree(tmp_path)
    (config / "adapters" / "people.yaml").write_text(PEOPLE_ADAPTER + "    max_rows: 2\n")
    with contextlib.closing(sqlite3.connect(tmp_path / "templates" / "people.db")) as con, con:
        con.execute("DELETE FROM people WHERE department = 'HR'")
    runtime = await build_runtime(load_config(config))
    try:
        people = runtime.get("people")
        result = await answering.answer(people, "Who works in Engineering and Sales?")
        meta = result.body["metadata"]
        assert meta["each_value"] == {"parameter": "department", "values": ["Engineering", "Sales"]}
        assert result.body["rows"] == [
            {"department": "Engineering", "name": "Ada"},
            {"department": "Sales", "name": "Linus"},
        ]
        assert meta["truncated"] is True and "the first 2 of more than 2 rows" in result.body["content"]

        with_none = await answering.answer(people, "Who works in Sales and HR?")
        assert with_none.body["rows"] == [{"department": "Sales", "name": "Linus"}]
        assert with_none.body["content"].endswith("\nNo rows for department HR.")
    finally:
        await runtime.close()

"""One answer per named value on a small SQLite source: the adapter's `max_rows` caps the whole answer,
shared among the values, a value without rows is said, and the named values wait through a clarification
for another parameter."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3

import pytest

from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.service import answer as answering
from server.testing.app import running_app, running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, people_tree

pytestmark = pytest.mark.asyncio


async def test_max_rows_caps_the_whole_answer_and_a_value_without_rows_is_said(tmp_path):
    config = people_tree(tmp_path, BASE_CONFIG + "result_cache: {enabled: false}\n")  # rows change below
    (config / "adapters" / "people.yaml").write_text(PEOPLE_ADAPTER + "    max_rows: 2\n")
    async with running_runtime(config) as runtime:
        people = runtime.get("people")
        result = await answering.answer(people, "Who works in Engineering and Sales?")
        meta = result.body["metadata"]
        assert meta["each_value"] == {"parameter": "department", "values": ["Engineering", "Sales"]}
        assert result.body["rows"] == [
            {"department": "Engineering", "name": "Ada"},
            {"department": "Sales", "name": "Linus"},
        ]
        assert meta["truncated"] is True and "the first 2 of more than 2 rows" in result.body["content"]
        three = await answering.answer(people, "Who works in Engineering, Sales and HR?")
        assert len(three.body["rows"]) == 2 and "No rows" not in three.body["content"]  # HR has a row, cut by the cap

        with contextlib.closing(sqlite3.connect(tmp_path / "templates" / "people.db")) as con, con:
            con.execute("DELETE FROM people WHERE department = 'HR'")
        with_none = await answering.answer(people, "Who works in Sales and HR?")
        assert with_none.body["rows"] == [{"department": "Sales", "name": "Linus"}]
        assert with_none.body["content"].endswith("\nNo rows for department HR.")


HIRES_LIBRARY = """
templates:
  - id: people_paid_above
    description: List the people of a department paid more than an amount
    nl_examples: ["Who in Engineering earns more than 100000?", "people in Sales paid above 50000"]
    parameters:
      - {name: department, type: string, required: true, allowed_values: [Engineering, Sales, HR]}
      - {name: min_salary, type: number, required: true}
    sql: "SELECT name FROM people WHERE department = :department AND salary > :min_salary ORDER BY name"
"""


async def test_a_clarification_for_another_value_keeps_the_named_values(tmp_path):
    """'Engineering and Sales' stays the department while the amount is asked for; the answer runs each."""
    sessions = MemorySessionStore(SessionSettings())
    async with running_runtime(people_tree(tmp_path, library=HIRES_LIBRARY)) as runtime:
        people = runtime.get("people")
        asked = await answering.answer_in_session(
            people, "Who in Engineering and Sales earns more than?", sessions, None
        )
        meta = asked.body["metadata"]
        assert asked.status == "needs_clarification" and [p["name"] for p in meta["clarification"]] == ["min_salary"]
        assert meta["parameters"]["department"] == ["Engineering", "Sales"]
        done = await answering.answer_in_session(people, "100000", sessions, asked.body["session_id"])
        meta = done.body["metadata"]
        assert done.status == "executed" and meta["reason"] == "clarification_answered"
        assert meta["each_value"] == {"parameter": "department", "values": ["Engineering", "Sales"]}
        assert done.body["rows"] == [
            {"department": "Engineering", "name": "Ada"},
            {"department": "Engineering", "name": "Grace"},
        ]
        assert done.body["content"].endswith("\nNo rows for department Sales.")


async def test_a_down_source_fails_the_whole_answer_with_a_503_naming_the_adapter(tmp_path):
    """Several values against a source whose file was removed: one 503 naming the adapter, no rows of half
    the runs, no driver text; concurrent askers all get the same answer and health names the source."""
    async with running_app(people_tree(tmp_path, BASE_CONFIG + "result_cache: {enabled: false}\n")) as (client, _):
        question = {"query": "Who works in Engineering and Sales?"}
        assert (await client.post("/v1/query", json=question)).status == 200
        (tmp_path / "templates" / "people.db").unlink()
        replies = await asyncio.gather(*(client.post("/v1/query", json=question) for _ in range(8)))
        bodies = [await r.json() for r in replies]
        assert {r.status for r in replies} == {503}
        assert {b["error"]["code"] for b in bodies} == {"source_unavailable"}
        assert all("people" in b["error"]["message"] and "sqlite" not in b["error"]["message"] for b in bodies)
        health = await (await client.get("/health")).json()
        assert health["adapters"]["people"]["status"] == "down"

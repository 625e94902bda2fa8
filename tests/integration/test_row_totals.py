"""A "how many" question that a cut list answers gets the list's total, counted at the source.

Before, "how many people are there?" on a list of the first 3 answered "(the first 3 of more than 3 rows)":
no number. Now the same query runs inside a count, its own limit lifted when the question left it at its
default; a limit the question set or the template wrote stays, and so does the cut answer.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time

import pytest

from server.adapters.own_limit import counting_query
from server.conversations.memory_store import MemorySessionStore
from server.conversations.settings import SessionSettings
from server.errors import SourceTimeout
from server.service import answer as answering
from server.testing.adapter_harness import started
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, make_tree, people_tree

from .test_adapter_mongodb import LIBRARY as CARS_LIBRARY
from .test_adapter_mongodb import settings_for
from .test_row_limits import MONGO_LIBRARY, SQL_LIBRARY, make_people_duckdb, sql_settings

LIMITED = frozenset({"limit"})


def counted(body: str) -> str:
    return f"SELECT COUNT(*) AS total_rows FROM (\n{body}\n) AS counted_rows"


@pytest.mark.parametrize(
    ("sql", "dialect", "defaults", "counted"),
    [
        (
            "SELECT a FROM t WHERE b = :b ORDER BY a LIMIT :limit",
            "sqlite",
            LIMITED,
            (counted("SELECT a FROM t WHERE b = :b ORDER BY a"), {"limit"}),
        ),
        (
            "SELECT a FROM t LIMIT $limit OFFSET $skip",
            "duckdb",
            frozenset({"limit", "skip"}),
            (counted("SELECT a FROM t"), {"limit", "skip"}),
        ),
        (  # the bind means something else as well: it stays bound
            "SELECT a FROM t WHERE rank <= :limit LIMIT :limit",
            "sqlite",
            LIMITED,
            (counted("SELECT a FROM t WHERE rank <= :limit"), set()),
        ),
        (  # no limit of its own (cut by max_rows): counted as written; a LIMIT in a subquery stays
            "SELECT a FROM (SELECT a FROM t LIMIT 3) x;",
            "sqlite",
            frozenset(),
            (counted("SELECT a FROM (SELECT a FROM t LIMIT 3) x"), set()),
        ),
        (  # a comment on the last line kept: the body ends a line of its own
            "SELECT a FROM t -- all of them",
            "sqlite",
            frozenset(),
            (counted("SELECT a FROM t -- all of them"), set()),
        ),
        ("SELECT a FROM t LIMIT 10", "sqlite", LIMITED, None),  # "top 10": written in the template
        ("SELECT a FROM t ORDER BY a LIMIT 10 OFFSET :skip", "sqlite", frozenset({"skip"}), None),  # the same
        ("SELECT a FROM t LIMIT :limit", "sqlite", frozenset(), None),  # the question's own limit
        ("SELECT a FROM t LIMIT :limit OFFSET :skip", "sqlite", LIMITED, None),  # an offset the question gave
    ],
)
def test_the_count_of_a_body(sql, dialect, defaults, counted):
    found = counting_query(sql, dialect, defaults)
    assert (found if found is None else (found.sql, set(found.lifted))) == counted


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_a_sql_source_counts_every_row_of_a_cut_list(tmp_path, kind):
    async with started(tmp_path, sql_settings(kind, tmp_path, max_rows=2), SQL_LIBRARY) as adapter:
        first_people, everyone = adapter.templates["first_people"], adapter.templates["everyone"]
        by_default = adapter.counting(first_people, {"limit": 3}, LIMITED)
        assert by_default is not None and by_default.params == {}  # the lifted limit is not bound
        assert "limit" not in {p.name for p in by_default.template.parameters}
        cut_by_cap = adapter.counting(everyone, {}, frozenset())
        assert cut_by_cap is not None
        counted = [await adapter.run(c.template, c.params) for c in (by_default, cut_by_cap)]
        assert adapter.counting(first_people, {"limit": 3}, frozenset()) is None  # "the first 3 people"
        assert adapter.counting(adapter.templates["first_two"], {}, LIMITED) is None
    assert [r.rows for r in counted] == [[{"total_rows": 4}], [{"total_rows": 4}]]


async def test_mongodb_counts_a_find_and_an_aggregate(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), CARS_LIBRARY) as adapter:
        under = adapter.counting(adapter.templates["cars_under_price"], {"max_price": 20000, "limit": 2}, LIMITED)
        assert under is not None and under.params == {"max_price": 20000}
        assert adapter.render_request(under.template, under.params) == {
            "collection": "cars",
            "operation": "count",
            "filter": {"price": {"$lt": 20000}},
        }
        by_fuel = adapter.counting(adapter.templates["average_price_by_fuel"], {"since": 2021}, frozenset())
        assert by_fuel is not None
        listed = await adapter.execute(adapter.templates["cars_under_price"], {"max_price": 20000, "limit": 100})
        counts = [await adapter.run(c.template, c.params) for c in (under, by_fuel)]
        given = adapter.counting(adapter.templates["cars_under_price"], {"max_price": 1, "limit": 2}, frozenset())
        assert given is None  # the question's own limit
        assert adapter.counting(adapter.templates["fuels"], {}, frozenset()) is None  # a distinct: no rows to count
    assert counts[0].rows == [{"count": len(listed.rows)}] and len(listed.rows) > 2
    assert counts[1].rows == [{"rows": 3}]  # diesel, electric, hybrid since 2021


async def test_an_aggregate_counts_without_its_last_limit(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), MONGO_LIBRARY) as adapter:
        newest = adapter.templates["newest_models"]
        counting = adapter.counting(newest, {"limit": 3}, LIMITED)
        assert counting is not None and counting.params == {}
        assert adapter.render_request(counting.template, {})["pipeline"][-2:] == [{"$count": "rows"}, {"$limit": 1001}]
        counted = await adapter.run(counting.template, counting.params)
        everything = await adapter.run(newest, {"limit": 1000})
    assert counted.rows == [{"rows": len(everything.rows)}] and len(everything.rows) > 3


@pytest.mark.parametrize("backend", ["postgresql", "mariadb"])
async def test_postgres_and_mariadb_count_a_bound_limit_lifted(tmp_path, request, backend):
    database = request.getfixturevalue("pg_database" if backend == "postgresql" else "mariadb_database")
    sql = {
        "postgresql": "SELECT g AS n FROM generate_series(1, 50) AS g WHERE g > :above ORDER BY g LIMIT :limit",
        "mariadb": "SELECT name FROM products WHERE LENGTH(name) > :above ORDER BY name LIMIT :limit",
    }[backend]
    library = f"""
    templates:
      - id: listed
        description: A long list
        parameters:
          - {{name: above, type: integer, default: 0}}
          - {{name: limit, type: integer, default: 2}}
        sql: "{sql}"
    """
    async with started(
        tmp_path, {"name": "db", "type": "sql", "connection": {"url": database.url}}, library
    ) as adapter:
        listed = adapter.templates["listed"]
        counting = adapter.counting(listed, {"above": 0, "limit": 2}, frozenset({"above", "limit"}))
        assert counting is not None and counting.params == {"above": 0}
        counted = await adapter.run(counting.template, counting.params)
        everything = await adapter.run(listed, {"above": 0, "limit": 1000})
    assert counted.rows == [{"total_rows": len(everything.rows)}] and len(everything.rows) > 2


LIST_LIBRARY = """
templates:
  - id: people_by_name
    description: List people in alphabetical order
    nl_examples: ["list the people", "show everyone by name", "who are the people here?"]
    parameters:
      - {name: limit, type: integer, default: 3, min: 1, max: 100}
    sql: "SELECT name FROM people ORDER BY name LIMIT $limit"
"""
LIST_ADAPTER = """
adapters:
  - name: people
    type: duckdb
    connection: {path: templates/people.duckdb}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.2
"""


async def test_how_many_on_a_cut_list_answers_with_the_total(tmp_path):
    config = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": LIST_ADAPTER}, {"people/people.yaml": LIST_LIBRARY})
    make_people_duckdb(tmp_path / "templates" / "people.duckdb")
    async with running_runtime(config) as runtime:
        people = runtime.get("people")
        counted = await answering.answer(people, "How many people are there?")
        listed = await answering.answer(people, "list the people")
        own_limit = await answering.answer(people, "how many of the first 2 people by name?")
    meta = counted.body["metadata"]
    assert meta["template_id"] == "people_by_name" and meta["truncated"] is True
    assert meta["total_rows"] == 4 and len(counted.body["rows"]) == 3
    assert "(the first 3 of 4 rows)" in counted.body["content"]
    assert "total_rows" not in listed.body["metadata"]  # not a count question: no count runs
    assert "(the first 3 of more than 3 rows)" in listed.body["content"]
    assert own_limit.body["metadata"]["parameters"]["limit"] == 2
    assert "total_rows" not in own_limit.body["metadata"]  # the question set the limit: its 2 rows are the answer


DEPARTMENT_LIBRARY = """
templates:
  - id: people_in_department
    description: List the people who work in a department
    nl_examples: ["Who works in Engineering?", "Show me the people in Sales", "list staff of the HR department"]
    parameters:
      - {name: department, type: string, required: true, allowed_values: [Engineering, Sales, HR]}
      - {name: limit, type: integer, default: 1, min: 1, max: 100}
    sql: |
      SELECT name FROM people WHERE department = :department
      ORDER BY name -- alphabetical
      LIMIT :limit
"""


async def test_a_conversation_keeps_the_count_question_through_a_clarification_and_a_follow_up(tmp_path):
    """'how many people work in a department?' asks which one; 'Engineering' answers it, and the count
    question is the first message's; 'what about Sales?' then changes the department of a count question.
    Neither message's own trace says the limit was left at its default: the values do."""
    config = people_tree(tmp_path, library=DEPARTMENT_LIBRARY)
    with contextlib.closing(sqlite3.connect(tmp_path / "templates" / "people.db")) as con, con:
        con.execute(
            "INSERT INTO people (name, department, salary) VALUES ('Barbara', 'Sales', 1), ('Edsger', 'Sales', 2)"
        )
    sessions = MemorySessionStore(SessionSettings())
    async with running_runtime(config) as runtime:
        people = runtime.get("people")
        asked = await answering.answer_in_session(people, "How many people work in a department?", sessions, None)
        assert asked.status == "needs_clarification"
        session = asked.body["session_id"]
        answered = await answering.answer_in_session(people, "Engineering", sessions, session)
        followed = await answering.answer_in_session(people, "what about Sales?", sessions, session)
    assert answered.body["metadata"]["reason"] == "clarification_answered"
    assert answered.body["metadata"]["total_rows"] == 2 and "(the first 1 of 2 rows)" in answered.body["content"]
    assert followed.body["metadata"]["parameters"]["department"] == "Sales"
    assert followed.body["metadata"]["total_rows"] == 3


SLOW_LIBRARY = """
templates:
  - id: numbers
    description: A long series of numbers
    parameters:
      - {name: limit, type: integer, default: 3}
    sql: |
      WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000)
      SELECT x FROM c
      LIMIT :limit
"""


async def test_a_slow_count_is_cut_at_count_timeout_and_never_opens_the_circuit(tmp_path):
    """The count of a hundred million rows outlasts count_timeout: each answer keeps its list, without a
    total, in about the count's budget; with a breaker that opens at the first failure, the source still
    answers afterwards, because a count is not one of its queries' failures."""
    settings = sql_settings("sqlite", tmp_path, count_timeout=0.3, circuit_breaker={"failure_threshold": 1})
    async with started(tmp_path, settings, SLOW_LIBRARY) as adapter:
        numbers = adapter.templates["numbers"]
        counting = adapter.counting(numbers, {"limit": 3}, LIMITED)
        assert counting is not None
        started_at = time.perf_counter()
        with pytest.raises(SourceTimeout):
            await adapter.count(counting)
        waited = time.perf_counter() - started_at
        listed = await adapter.run(numbers, {"limit": 3})
        assert adapter.guard.breaker.state == "closed"
    assert waited < 2.0  # the adapter's query_timeout is 10 s
    assert [r["x"] for r in listed.rows] == [1, 2, 3] and listed.truncated


async def test_mariadb_does_not_count_a_list_whose_columns_share_a_name(tmp_path, mariadb_database, pg_database):
    """MariaDB refuses a derived table with two columns of one name; PostgreSQL counts the same list."""
    library = """
    templates:
      - id: pairs
        description: Pairs of rows
        parameters:
          - {name: limit, type: integer, default: 2}
        sql: |
          SELECT a.n, b.n FROM (SELECT 1 AS n UNION ALL SELECT 2) a
          CROSS JOIN (SELECT 1 AS n UNION ALL SELECT 2) b LIMIT :limit
    """
    for database in (mariadb_database, pg_database):
        settings = {"name": "db", "type": "sql", "connection": {"url": database.url}}
        async with started(tmp_path / database.url.split(":")[0], settings, library) as adapter:
            counting = adapter.counting(adapter.templates["pairs"], {"limit": 2}, LIMITED)
            if database is mariadb_database:
                assert counting is None
            else:
                assert counting is not None
                assert (await adapter.count(counting)).rows == [{"total_rows": 4}]

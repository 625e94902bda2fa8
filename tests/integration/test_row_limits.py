"""An answer cut by its template's own limit says so (`truncated`), on every backend that has one: the
answer asks for one row more than the limit (or reads the reply's own count) and shows the limit.

Before, `LIMIT :limit` with limit 3 over 4 rows answered 3 rows with truncated false: "all of them".
"""

from __future__ import annotations

import duckdb
import pytest

from server.testing.adapter_harness import started
from server.testing.configs import make_people_db
from server.testing.es_standin import running_es_standin
from server.testing.mongo import CARS

SQL_LIBRARY = """
templates:
  - id: first_people
    description: People by name, a limited list
    parameters:
      - {name: limit, type: integer, default: 3, min: 1, max: 100}
    sql: "SELECT name FROM people ORDER BY name LIMIT :limit"
  - id: first_two
    description: The first two people by name
    sql: "SELECT name FROM people ORDER BY name LIMIT 2"
  - id: everyone
    description: Everyone
    sql: "SELECT name FROM people ORDER BY name"
"""


def make_people_duckdb(path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('Ada'), ('Grace'), ('Ken'), ('Linus')) t(name)")
    con.close()


def sql_settings(kind: str, tmp_path, **extra) -> dict:
    if kind == "sqlite":
        make_people_db(tmp_path / "people.db")
        return {"name": "people", "type": "sql", "connection": {"url": f"sqlite:///{tmp_path / 'people.db'}"}, **extra}
    make_people_duckdb(tmp_path / "people.duckdb")
    return {"name": "people", "type": "duckdb", "connection": {"path": str(tmp_path / "people.duckdb")}, **extra}


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_an_answer_cut_by_the_templates_own_limit_is_truncated(tmp_path, kind):
    async with started(tmp_path, sql_settings(kind, tmp_path), SQL_LIBRARY) as adapter:
        cut = await adapter.run(adapter.templates["first_people"], {"limit": 3})
        whole = await adapter.run(adapter.templates["first_people"], {"limit": 4})
        more_than_all = await adapter.run(adapter.templates["first_people"], {"limit": 10})
        written = await adapter.run(adapter.templates["first_two"], {})
    assert [r["name"] for r in cut.rows] == ["Ada", "Grace", "Ken"] and cut.truncated
    assert len(whole.rows) == 4 and not whole.truncated  # exactly all of them: not cut
    assert len(more_than_all.rows) == 4 and not more_than_all.truncated
    assert [r["name"] for r in written.rows] == ["Ada", "Grace"] and written.truncated


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_max_rows_and_the_own_limit_cut_at_the_smaller(tmp_path, kind):
    async with started(tmp_path, sql_settings(kind, tmp_path, max_rows=2), SQL_LIBRARY) as adapter:
        by_cap = await adapter.run(adapter.templates["first_people"], {"limit": 3})
        by_cap_alone = await adapter.run(adapter.templates["everyone"], {})
    assert len(by_cap.rows) == 2 and by_cap.truncated
    assert len(by_cap_alone.rows) == 2 and by_cap_alone.truncated


@pytest.mark.parametrize("kind", ["sqlite", "duckdb"])
async def test_a_values_list_runs_its_query_as_written(tmp_path, kind):
    """A values_from list (the caller's cap) is not an answer: a LIMIT there is the operator's choice."""
    async with started(tmp_path, sql_settings(kind, tmp_path), SQL_LIBRARY) as adapter:
        listed = await adapter.list_rows(adapter.templates["first_two"], 100)
    assert len(listed.rows) == 2 and not listed.truncated


async def test_postgres_bound_limit(tmp_path, pg_database):
    library = """
    templates:
      - id: first_numbers
        description: The first numbers of a long series
        parameters:
          - {name: limit, type: integer, default: 5}
        sql: "SELECT g AS n FROM generate_series(1, 50) AS g ORDER BY g LIMIT :limit"
    """
    settings = {"name": "inventory", "type": "sql", "connection": {"url": pg_database.url}}
    async with started(tmp_path, settings, library) as adapter:
        cut = await adapter.run(adapter.templates["first_numbers"], {"limit": 5})
        whole = await adapter.run(adapter.templates["first_numbers"], {"limit": 50})
    assert [r["n"] for r in cut.rows] == [1, 2, 3, 4, 5] and cut.truncated
    assert len(whole.rows) == 50 and not whole.truncated


async def test_mariadb_bound_limit(tmp_path, mariadb_database):
    library = """
    templates:
      - id: first_products
        description: The first products by name
        parameters:
          - {name: limit, type: integer, default: 2}
        sql: "SELECT name FROM products ORDER BY name LIMIT :limit"
    """
    settings = {"name": "shop", "type": "sql", "connection": {"url": mariadb_database.url}}
    async with started(tmp_path, settings, library) as adapter:
        cut = await adapter.run(adapter.templates["first_products"], {"limit": 2})
        whole = await adapter.run(adapter.templates["first_products"], {"limit": 100})
    assert len(cut.rows) == 2 and cut.truncated
    assert 2 < len(whole.rows) < 100 and not whole.truncated


MONGO_LIBRARY = """
templates:
  - id: cheapest_cars
    description: The cheapest cars
    parameters:
      - {name: limit, type: integer, default: 3}
    mongodb:
      collection: cars
      projection: {_id: 0, model: 1}
      sort: {price: 1}
      limit: {$param: limit}
  - id: newest_models
    description: The newest models, aggregated
    parameters:
      - {name: limit, type: integer, default: 3}
    mongodb:
      collection: cars
      operation: aggregate
      pipeline:
        - {$sort: {year: -1, model: 1}}
        - {$project: {_id: 0, model: 1}}
        - {$limit: {$param: limit}}
"""


async def test_mongodb_find_and_aggregate_limits(tmp_path, mongo_server):
    settings = {
        "name": "cars",
        "type": "mongodb",
        "connection": {"url": mongo_server.url, "database": mongo_server.database},
    }
    async with started(tmp_path, settings, MONGO_LIBRARY) as adapter:
        find = adapter.templates["cheapest_cars"]
        assert adapter.render_request(find, {"limit": 3})["limit"] == 4  # one more than the template's limit
        cut = await adapter.run(find, {"limit": 3})
        whole = await adapter.run(find, {"limit": len(CARS)})
        grouped = await adapter.run(adapter.templates["newest_models"], {"limit": 2})
        all_grouped = await adapter.run(adapter.templates["newest_models"], {"limit": len(CARS)})
    assert len(cut.rows) == 3 and cut.truncated
    assert len(whole.rows) == len(CARS) and not whole.truncated
    assert len(grouped.rows) == 2 and grouped.truncated
    assert len(all_grouped.rows) == len(CARS) and not all_grouped.truncated


ES_LIBRARY = """
templates:
  - id: some_tickets
    description: Some tickets
    parameters:
      - {name: limit, type: integer, default: 2}
    elasticsearch:
      index: tickets
      body: {query: {match_all: {}}, size: {$param: limit}}
      fields: {ticket: id}
"""


async def test_elasticsearch_size_cut_is_told_by_the_hit_total(tmp_path):
    async with running_es_standin() as es:
        settings = {"name": "support", "type": "elasticsearch", "connection": {"url": es.url}}
        async with started(tmp_path, settings, ES_LIBRARY) as adapter:
            cut = await adapter.run(adapter.templates["some_tickets"], {"limit": 2})
            assert es.received[-1]["body"]["size"] == 2  # the request is as written: the reply counts the rest
            whole = await adapter.run(adapter.templates["some_tickets"], {"limit": 50})
    assert len(cut.rows) == 2 and cut.truncated
    assert len(whole.rows) == len(es.docs["tickets"]) and not whole.truncated

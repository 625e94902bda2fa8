"""Templates checked against their live source before a user meets them (issue 29, item 2).

Before, `SELECT titel ...` passed `validate` and a reload, and every question then got 502 "failed to
run" while only the server log said `no such column: titel`. Now `validate`, the start and every reload
plan or prepare each SQL/DuckDB body with NULL binds (no rows read) and look up each MongoDB collection
and Elasticsearch index; a refusal names file:line, the template and the database's own message, and a
source that is down is reported as unchecked instead."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from server.config.errors import ConfigError
from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.runtime.source_checks import check_config_sources
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, make_tree, people_tree
from server.testing.demo import warm_demo_tree
from server.testing.es_standin import running_es_standin
from server.testing.servers import free_port

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, str(REPO / "run.py"), "--log-level", "WARNING", *args]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


def misspell(path: Path, right: str, wrong: str) -> int:
    """Replace the first `right` with `wrong` in a library; the line it is on."""
    text = path.read_text()
    assert right in text
    path.write_text(text.replace(right, wrong, 1))
    return text[: text.index(right)].count("\n") + 1


def template_line(path: Path, template_id: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == f"- id: {template_id}")


def sql_line(path: Path, template_id: str) -> int:
    """The line of the template's `sql:` key: a refusal of the body points there, not at the `- id:`."""
    lines = path.read_text().splitlines()
    start = template_line(path, template_id)
    return next(i for i, line in enumerate(lines[start:], start + 1) if line.strip().startswith("sql:"))


def test_validate_on_the_demo_names_the_misspelt_column_and_exits_1(tmp_path):
    config = warm_demo_tree(tmp_path)
    hr = tmp_path / "templates" / "hr" / "employees.yaml"
    sales = tmp_path / "templates" / "sales" / "customers.yaml"
    misspell(
        hr,
        "SELECT first_name, last_name, title, city, hire_date",
        "SELECT first_name, last_name, titel, city, hire_date",
    )
    misspell(sales, "SELECT name, region, country, signup_date", "SELECT name, regoin, country, signup_date")
    done = run_cli("validate", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    lines = done.stderr.splitlines()
    assert lines[0] == "configuration errors (2):"
    assert lines[1] == (
        f"  templates/hr/employees.yaml:{sql_line(hr, 'employees_by_department')}: "
        "templates[id=employees_by_department].sql: hr (sqlite) refuses it: no such column: titel"
    )
    assert lines[2].startswith(
        f"  templates/sales/customers.yaml:{sql_line(sales, 'customers_by_segment')}: "
        'templates[id=customers_by_segment].sql: sales (duckdb) refuses it: Binder Error: Referenced column "regoin"'
    )
    assert "LINE 1" not in done.stderr and "SELECT" not in done.stderr  # the message, not the statement


def test_validate_on_the_demo_as_shipped_checks_every_template(tmp_path):
    config = warm_demo_tree(tmp_path)
    done = run_cli("validate", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    count = done.stdout.splitlines()[0].split(", ")[1].split()[0]
    assert done.stdout.splitlines()[1] == f"checked against their sources: {count} of {count} templates"


async def test_a_reload_with_a_misspelt_column_is_refused_and_the_last_good_config_answers(tmp_path):
    config = people_tree(tmp_path)
    library = tmp_path / "templates" / "people" / "people.yaml"
    question = {"query": "Who works in Engineering?", "adapter": "people"}
    async with running_app(config) as (client, _):
        assert (await client.post("/v1/query", json=question)).status == 200
        line = sql_line(library, "people_in_department")
        misspell(library, "SELECT name FROM people WHERE department", "SELECT nmae FROM people WHERE department")
        refused = await client.post("/admin/reload")
        assert refused.status == 422
        error = {
            "file": "templates/people/people.yaml",
            "line": line,
            "key": "templates[id=people_in_department].sql",
            "message": "people (sqlite) refuses it: no such column: nmae",
        }
        assert (await refused.json())["errors"] == [error]
        health = await (await client.get("/health")).json()
        assert health["status"] == "degraded" and health["config"]["last_load"]["errors"] == [error]
        answered = await client.post("/v1/query", json=question)  # the last good template still answers
        assert answered.status == 200 and (await answered.json())["rows"] == [{"name": "Ada"}, {"name": "Grace"}]
        misspell(library, "SELECT nmae FROM people", "SELECT name FROM people")
        assert (await client.post("/admin/reload")).status == 200


async def test_a_start_with_a_misspelt_table_fails_like_any_config_error(tmp_path):
    config = people_tree(tmp_path)
    misspell(tmp_path / "templates" / "people" / "people.yaml", "FROM people GROUP BY", "FROM peeple GROUP BY")
    with pytest.raises(ConfigError) as caught:
        await build_runtime(load_config(config))
    (issue,) = caught.value.issues
    assert issue.key == "templates[id=headcount_by_department].sql"
    assert issue.message == "people (sqlite) refuses it: no such table: peeple"


async def test_the_check_reads_no_rows(tmp_path):
    """A body that would take minutes to run is planned in moments: nothing is executed."""
    config = people_tree(tmp_path)
    slow = """
  - id: forever
    description: Count to a billion
    sql: >-
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000)
      SELECT count(*) AS n FROM n
"""
    library = tmp_path / "templates" / "people" / "people.yaml"
    library.write_text(library.read_text() + slow)
    started = time.perf_counter()
    (check,) = await check_config_sources(load_config(config))
    assert time.perf_counter() - started < 5
    assert (check.status, check.templates, check.issues) == ("checked", 4, ())


DOWN_PG = """
adapters:
  - name: stock
    type: sql
    connection: {{url: "postgresql+psycopg://nobody@127.0.0.1:{port}/nothing", connect_timeout: 1}}
    templates: ["templates/stock/*.yaml"]
"""
STOCK = """
templates:
  - id: stock_levels
    description: Stock of every item
    nl_examples: ["how much stock is left", "inventory levels"]
    sql: "SELECT item, qty FROM stock ORDER BY item"
"""


async def test_a_source_down_at_load_is_unchecked_not_an_error(tmp_path):
    config = people_tree(tmp_path)
    make_tree(tmp_path, BASE_CONFIG, {"stock.yaml": DOWN_PG.format(port=free_port())}, {"stock/stock.yaml": STOCK})
    checks = {c.adapter: c for c in await check_config_sources(load_config(config))}
    assert (checks["people"].status, checks["stock"].status) == ("checked", "unchecked")
    assert checks["stock"].reason == "cannot connect to the database"
    done = await asyncio.to_thread(run_cli, "validate", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warning = (
        "warning: adapter 'stock': 1 templates not checked against the source (cannot connect to the database);"
        " the next load or reload that reaches it checks them"
    )
    assert warning in done.stderr.splitlines()
    assert done.stdout.splitlines()[1] == "checked against their sources: 3 of 4 templates"
    async with running_app(config) as (client, _):
        health = await (await client.get("/health")).json()
        assert warning.removeprefix("warning: ") in health["config"]["last_load"]["warnings"]
        assert health["adapters"]["stock"]["templates_checked"] == {
            "status": "unchecked",
            "templates": 1,
            "reason": "cannot connect to the database",
        }
        assert "templates_checked" not in health["adapters"]["people"]  # checked: nothing to say


def pg_tree(root: Path, url: str, library: str) -> Path:
    adapter = f'adapters:\n  - name: inventory\n    type: sql\n    connection: {{url: "{url}"}}\n'
    adapter += '    templates: ["templates/inventory/*.yaml"]\n'
    return make_tree(root, BASE_CONFIG, {"inventory.yaml": adapter}, {"inventory/lib.yaml": library})


TYPED = """
templates:
  - id: typed_binds
    description: Binds of every type, planned with typed NULLs
    parameters:
      - {name: category, type: string, required: true}
      - {name: since, type: date, required: true}
      - {name: max_price, type: number, required: true}
      - {name: limit, type: integer, default: 10}
    sql: >-
      SELECT p.name, extract(year from CAST(:since AS date)) AS since_year FROM products p
      WHERE p.category = :category AND p.name LIKE '%' || :category || '%' AND p.price < :max_price
      AND p.updated_at >= :since ORDER BY p.name LIMIT :limit
  - id: misspelt
    description: A column that is not there
    sql: "SELECT p.nmae FROM products p"
"""


async def test_postgres_plans_with_typed_nulls_and_names_the_column(tmp_path, pg_database):
    with pytest.raises(ConfigError) as caught:
        await check_config_sources(load_config(pg_tree(tmp_path, pg_database.url, TYPED)))
    assert [(i.key, i.message) for i in caught.value.issues] == [
        ("templates[id=misspelt].sql", "inventory (postgresql) refuses it: column p.nmae does not exist")
    ]


async def test_mariadb_prepares_and_names_the_column(tmp_path, mariadb_database):
    library = TYPED.replace("extract(year from CAST(:since AS date))", "YEAR(:since)").replace(
        "'%' || :category || '%'", "CONCAT('%', :category, '%')"
    )
    with pytest.raises(ConfigError) as caught:
        await check_config_sources(load_config(pg_tree(tmp_path, mariadb_database.url, library)))
    assert [(i.key, i.message) for i in caught.value.issues] == [
        ("templates[id=misspelt].sql", "inventory (mysql) refuses it: Unknown column 'p.nmae' in 'SELECT'")
    ]


CARS = """
templates:
  - id: cars_by_make
    description: Cars of one make
    parameters: [{name: make, required: true}]
    mongodb: {collection: cars, filter: {make: {$param: make}}}
  - id: boats
    description: Boats, in a collection that is not there
    mongodb: {collection: boats, filter: {}}
"""


async def test_mongodb_collections_must_exist(tmp_path, mongo_server):
    adapter = (
        f"adapters:\n  - name: cars\n    type: mongodb\n"
        f'    connection: {{url: "{mongo_server.url}", database: {mongo_server.database}}}\n'
        '    templates: ["templates/cars/*.yaml"]\n'
    )
    config = make_tree(tmp_path, BASE_CONFIG, {"cars.yaml": adapter}, {"cars/cars.yaml": CARS})
    with pytest.raises(ConfigError) as caught:
        await check_config_sources(load_config(config))
    assert [(i.key, i.message) for i in caught.value.issues] == [
        (
            "templates[id=boats].mongodb",
            f"cars (mongodb) refuses it: no collection 'boats' in database '{mongo_server.database}'",
        )
    ]


TICKETS = """
templates:
  - id: open_tickets
    description: Open tickets
    elasticsearch: {index: tickets, body: {query: {term: {status: open}}}}
  - id: old_tickets
    description: Tickets of an index that is not there
    elasticsearch: {index: tickets_2019, body: {query: {match_all: {}}}}
"""


async def test_elasticsearch_indices_must_exist(tmp_path):
    async with running_es_standin() as es:
        adapter = f'adapters:\n  - name: support\n    type: elasticsearch\n    connection: {{url: "{es.url}"}}\n'
        adapter += '    templates: ["templates/support/*.yaml"]\n'
        config = make_tree(tmp_path, BASE_CONFIG, {"support.yaml": adapter}, {"support/tickets.yaml": TICKETS})
        with pytest.raises(ConfigError) as caught:
            await check_config_sources(load_config(config))
        assert es.received == []  # no search ran
    assert [(i.key, i.message) for i in caught.value.issues] == [
        ("templates[id=old_tickets].elasticsearch.index", "support (elasticsearch) refuses it: no index 'tickets_2019'")
    ]

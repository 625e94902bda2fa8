"""Values bound into LIKE patterns match literally (% and _ escaped) unless the parameter says
`pattern_allowed: true`: on SQLite, DuckDB, PostgreSQL and MariaDB, and for the demo's "order history"."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.service import answer as answering
from server.testing.adapter_harness import started
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, make_people_db, make_tree
from server.testing.demo import warm_demo_tree

CONTAINS = "'%' || :q || '%'"


def library(pattern: str = CONTAINS, op: str = "LIKE", table: str = "products") -> str:
    return f"""
templates:
  - id: contains
    description: names containing a text
    parameters: [{{name: q, type: string, required: true}}]
    sql: "SELECT name FROM {table} WHERE name {op} {pattern} ORDER BY name"
  - id: free_pattern
    description: names matching an operator-given pattern
    parameters: [{{name: q, type: string, required: true, pattern_allowed: true}}]
    sql: "SELECT name FROM {table} WHERE name {op} {pattern} ORDER BY name"
"""


NAMES = ["Oak desk", "Desk lamp", "100% wool rug", "snake_case mug", "Office chair"]


async def check(adapter) -> None:
    async def names(template: str, q: str) -> list[str]:
        return [r["name"] for r in (await adapter.execute(adapter.templates[template], {"q": q})).rows]

    assert await names("contains", "%") == ["100% wool rug"]
    assert await names("contains", "_") == ["snake_case mug"]
    assert await names("contains", "k_c") == []  # `_` is not "any character"
    assert await names("contains", "e_c") == ["snake_case mug"]
    assert await names("contains", "!") == []  # the escape character itself is literal
    assert await names("contains", "%' OR '1'='1") == []
    assert len(await names("contains", "desk")) in (1, 2)  # LIKE is case-sensitive on some backends
    assert len(await names("free_pattern", "%")) == len(NAMES)  # the operator asked for patterns
    assert await names("free_pattern", "O_k") == ["Oak desk"]
    assert await names("contains", "O_k") == []


def seed_sqlite(path) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE products (name TEXT)")
    con.executemany("INSERT INTO products VALUES (?)", [(n,) for n in NAMES])
    con.commit()
    con.close()


async def test_sqlite(tmp_path):
    seed_sqlite(tmp_path / "p.db")
    settings = {"name": "shop", "type": "sql", "connection": {"url": f"sqlite:///{tmp_path / 'p.db'}"}}
    async with started(tmp_path, settings, library()) as adapter:
        await check(adapter)


async def test_duckdb_ilike(tmp_path):
    con = duckdb.connect(str(tmp_path / "p.duckdb"))
    con.execute("CREATE TABLE products (name VARCHAR)")
    con.executemany("INSERT INTO products VALUES (?)", [(n,) for n in NAMES])
    con.close()
    settings = {"name": "shop", "type": "duckdb", "connection": {"path": str(tmp_path / "p.duckdb")}}
    async with started(tmp_path, settings, library(op="ILIKE")) as adapter:
        await check(adapter)


async def test_postgres_ilike(tmp_path, pg_database):
    from sqlalchemy import create_engine, text

    engine = create_engine(pg_database.url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE like_names (name text)"))
        conn.execute(text("INSERT INTO like_names VALUES (:n)"), [{"n": n} for n in NAMES])
    engine.dispose()
    settings = {"name": "shop", "type": "sql", "connection": {"url": pg_database.url}}
    async with started(tmp_path, settings, library(op="ILIKE", table="like_names")) as adapter:
        await check(adapter)


async def test_mariadb_concat(tmp_path, mariadb_database):
    from sqlalchemy import create_engine, text

    engine = create_engine(mariadb_database.url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE like_names (name varchar(64))"))
        conn.execute(text("INSERT INTO like_names VALUES (:n)"), [{"n": n} for n in NAMES])
    engine.dispose()
    settings = {"name": "shop", "type": "sql", "connection": {"url": mariadb_database.url}}
    async with started(tmp_path, settings, library(pattern="CONCAT('%', :q, '%')", table="like_names")) as adapter:
        await check(adapter)


async def test_a_template_escape_clause_is_kept_and_used(tmp_path):
    seed_sqlite(tmp_path / "p.db")
    settings = {"name": "shop", "type": "sql", "connection": {"url": f"sqlite:///{tmp_path / 'p.db'}"}}
    lib = library(pattern="'%' || :q || '%' ESCAPE '#'")
    async with started(tmp_path, settings, lib) as adapter:
        assert adapter.templates["contains"].body.count("ESCAPE") == 1
        rows = (await adapter.execute(adapter.templates["contains"], {"q": "0%"})).rows
    assert [r["name"] for r in rows] == ["100% wool rug"]


def test_pattern_allowed_is_for_strings(tmp_path):
    lib = (
        "templates:\n  - id: t\n    description: d\n"
        "    parameters: [{name: n, type: integer, pattern_allowed: true}]\n"
        '    sql: "SELECT name FROM people WHERE id = :n"\n'
    )
    tree = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, {"people/p.yaml": lib})
    with pytest.raises(ConfigError) as info:
        load_config(tree)
    assert "pattern_allowed applies to string parameters" in str(info.value)


async def test_demo_order_history_for_a_percent_sign_returns_nothing(tmp_path):
    async with running_runtime(warm_demo_tree(tmp_path)) as runtime:
        sales = runtime.get("sales").adapter
        template = sales.templates["customer_order_history"]
        everything = await sales.execute(template, {"customer_name": "%", "limit": 500})
        some = await sales.execute(template, {"customer_name": "Greenfield", "limit": 500})
        answered = await answering.answer(runtime.get("company"), 'order history for "%"')
    assert everything.rows == [] and some.rows
    assert answered.body["rows"] == []


REGEX_CASES = [
    (PEOPLE_ADAPTER, "SELECT name FROM people WHERE name GLOB :q"),
    (PEOPLE_ADAPTER, "SELECT name FROM people WHERE name REGEXP :q"),
    (
        PEOPLE_ADAPTER.replace("sqlite:///templates/people.db", "postgresql+psycopg://u@127.0.0.1:1/x"),
        "SELECT name FROM people WHERE name SIMILAR TO :q",
    ),
    (
        PEOPLE_ADAPTER.replace("type: sql", "type: duckdb").replace(
            '{url: "sqlite:///templates/people.db"}', "{path: templates/people.db}"
        ),
        "SELECT name FROM people WHERE regexp_matches(name, :q)",
    ),
]


@pytest.mark.parametrize(("adapter", "sql"), REGEX_CASES)
def test_binds_in_glob_and_regex_patterns_need_pattern_allowed(tmp_path, adapter, sql):
    def tree(flag: str):
        lib = (
            "templates:\n  - id: t\n    description: d\n"
            f"    parameters: [{{name: q, type: string, required: true{flag}}}]\n"
            f'    sql: "{sql}"\n'
        )
        return make_tree(tmp_path, BASE_CONFIG, {"people.yaml": adapter}, {"people/p.yaml": lib})

    with pytest.raises(ConfigError) as info:
        load_config(tree(""))
    [issue] = info.value.issues
    assert (issue.file, issue.line, issue.key) == ("templates/people/p.yaml", 2, "templates[id=t].sql")
    assert "pattern_allowed: true" in issue.message
    assert load_config(tree(", pattern_allowed: true")).templates["people"][0].id == "t"


async def test_a_parameter_used_in_a_like_pattern_and_elsewhere_keeps_its_raw_value_elsewhere(tmp_path):
    seed_sqlite(tmp_path / "p.db")
    con = duckdb.connect(str(tmp_path / "p.duckdb"))
    con.execute("CREATE TABLE products (name VARCHAR)")
    con.executemany("INSERT INTO products VALUES (?)", [(n,) for n in NAMES])
    con.close()
    lib = (
        "templates:\n  - id: t\n    description: d\n"
        "    parameters: [{name: q, type: string, required: true}]\n"
        "    sql: \"SELECT name, name = :q AS exact FROM products WHERE name = :q OR name LIKE '%' || :q || '%'\"\n"
    )
    for settings in (
        {"name": "shop", "type": "sql", "connection": {"url": f"sqlite:///{tmp_path / 'p.db'}"}},
        {"name": "shop", "type": "duckdb", "connection": {"path": str(tmp_path / "p.duckdb")}},
    ):
        async with started(tmp_path, settings, lib) as adapter:
            template = adapter.templates["t"]
            exact = (await adapter.execute(template, {"q": "snake_case mug"})).rows
            wildcard = (await adapter.execute(template, {"q": "%"})).rows
        assert [(r["name"], bool(r["exact"])) for r in exact] == [("snake_case mug", True)], settings["type"]
        assert [r["name"] for r in wildcard] == ["100% wool rug"], settings["type"]


def test_reserved_bind_prefix(tmp_path):
    lib = (
        "templates:\n  - id: t\n    description: d\n"
        "    parameters: [{name: __like_q, type: string}]\n"
        '    sql: "SELECT name FROM people WHERE name LIKE :__like_q"\n'
    )
    make_people_db(tmp_path / "templates" / "people.db")
    tree = make_tree(tmp_path, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, {"people/p.yaml": lib})
    with pytest.raises(ConfigError, match="reserved"):
        load_config(tree)

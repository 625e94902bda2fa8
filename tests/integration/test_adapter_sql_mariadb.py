"""The sql adapter against the MariaDB server on loopback: types, binds, read-only, caps, errors."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from server.config.errors import ConfigError
from server.errors import QueryFailed, SourceTimeout, SourceUnavailable
from server.testing.adapter_harness import load_adapter, started
from server.testing.servers import free_port

LIBRARY = """
templates:
  - id: products_in_category
    description: Products of a category with price, stock, pick time and warehouse opening
    parameters:
      - {name: category, type: string, required: true}
    sql: >-
      SELECT p.name, p.price, p.in_stock, p.pick_time, p.updated_at, w.opened_on
      FROM products p JOIN warehouses w ON w.code = p.warehouse
      WHERE p.category = :category ORDER BY p.price
  - id: product_by_name
    description: One product by name
    parameters:
      - {name: name, type: string, required: true}
    sql: "SELECT id, name FROM products WHERE name = :name"
  - id: top_products
    description: The most expensive products, MySQL identifier quoting and a typed LIMIT bind
    parameters:
      - {name: limit, type: integer, default: 3}
    sql: "SELECT `name`, `price` FROM `products` ORDER BY `price` DESC LIMIT :limit"
  - id: many_rows
    description: A long sequence
    sql: "SELECT seq AS n FROM seq_1_to_200000"
  - id: heavy
    description: A slow aggregate
    sql: "SELECT count(*) AS n FROM seq_1_to_100000 a, seq_1_to_100000 b"
  - id: broken
    description: A column that does not exist
    sql: "SELECT no_such_column FROM products"
"""


def settings_for(db, **extra):
    return {"name": "inventory", "type": "sql", "connection": {"url": db.url, "connect_timeout": 2}, **extra}


async def test_driver_types_serialise_to_json(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["products_in_category"], {"category": "lighting"})
    assert result.rows == [
        {
            "name": "Desk lamp",
            "price": 39.9,
            "in_stock": 1,
            "pick_time": 60.0,
            "updated_at": "2024-05-02T10:00:00",
            "opened_on": "2015-03-01",
        },
        {
            "name": "Floor lamp",
            "price": 89.99,
            "in_stock": 1,
            "pick_time": 90.0,
            "updated_at": "2024-05-04T08:00:00",
            "opened_on": "2018-09-15",
        },
    ]
    assert json.loads(json.dumps(result.rows)) == result.rows


async def test_mysql_syntax_and_limit_bind(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["top_products"], {"limit": 2})
    assert result.rows == [{"name": "Oak desk", "price": 349}, {"name": "Office chair", "price": 219.5}]


async def test_sessions_are_read_only(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database), LIBRARY) as adapter:
        with adapter._engine.connect() as conn, pytest.raises(Exception, match="READ ONLY"):
            conn.execute(text("DELETE FROM products"))
        result = await adapter.execute(adapter.templates["product_by_name"], {"name": "Bookshelf"})
    assert result.rows == [{"id": 5, "name": "Bookshelf"}]


async def test_row_cap_is_enforced_by_the_server(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database, max_rows=5), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["many_rows"], {})
        with adapter._engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT @@SESSION.sql_select_limit").scalar() == 6
    assert [r["n"] for r in result.rows] == [1, 2, 3, 4, 5] and result.truncated


async def test_statement_timeout_is_504(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database, query_timeout=0.3), LIBRARY) as adapter:
        with pytest.raises(SourceTimeout) as info:
            await adapter.execute(adapter.templates["heavy"], {})
        assert (await adapter.execute(adapter.templates["product_by_name"], {"name": "Oak desk"})).rows
    assert info.value.status == 504 and info.value.message == "adapter 'inventory': query timed out after 0.3 s"


async def test_bad_query_is_502_without_driver_text(tmp_path, mariadb_database):
    async with started(tmp_path, settings_for(mariadb_database), LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as info:
            await adapter.execute(adapter.templates["broken"], {})
    assert info.value.message == "adapter 'inventory': template 'broken' failed to run"


async def test_server_down_is_503(tmp_path):
    settings = {
        "name": "inventory",
        "type": "sql",
        "connection": {"url": f"mysql+pymysql://root@127.0.0.1:{free_port()}/test", "connect_timeout": 1},
    }
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.execute(adapter.templates["product_by_name"], {"name": "x"})
    assert info.value.message == "adapter 'inventory': cannot connect to the database"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT SLEEP(10) AS s", r"sleep\(\) is not allowed"),
        ("SELECT LOAD_FILE('/etc/passwd') AS f", "load_file"),
        ("SELECT BENCHMARK(100000000, MD5('x')) AS b", "benchmark"),
        ("SELECT name FROM products FOR UPDATE", "locking clauses"),
        ("SELECT name INTO OUTFILE '/tmp/x' FROM products", "read-only|does not parse"),
    ],
)
async def test_dialect_guard_refuses_at_start(tmp_path, mariadb_database, sql, message):
    library = (
        f"templates:\n  - id: bad\n    description: Something a template must not do\n    sql: {json.dumps(sql)}\n"
    )
    try:
        adapter = load_adapter(tmp_path, settings_for(mariadb_database), library)
    except ConfigError as exc:  # refused already at load by the dialect-independent guard
        assert re.search(message, str(exc))
        return
    with pytest.raises(ConfigError, match=message):
        await adapter.start()
    await adapter.close()


hostile = st.one_of(
    st.sampled_from(
        [
            "'; DROP TABLE products; --",
            "Oak desk' OR '1'='1",
            "\\'; DELETE FROM products; #",
            "Oak desk\\",
            "ä😀",
            "x" * 5000,
            '{"$gt": ""}',
            "%",
            "_",
        ]
    ),
    st.text(max_size=100).filter(lambda s: "\x00" not in s),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile)
async def test_hostile_values_are_inert_binds(tmp_path, mariadb_database, value):
    async with started(tmp_path, settings_for(mariadb_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["product_by_name"], {"name": value})
        everything = await adapter.execute(adapter.templates["top_products"], {"limit": 100})
    assert result.rows == [] or [r["name"] for r in result.rows] == [value]
    assert len(everything.rows) == 6


async def test_a_values_list_has_its_own_row_cap_and_the_session_keeps_max_rows(tmp_path, mariadb_database):
    """sql_select_limit (max_rows + 1 per session) moves for a values_from list and comes back."""
    async with started(tmp_path, settings_for(mariadb_database, max_rows=5), LIBRARY) as adapter:
        listed = await adapter.list_rows(adapter.templates["many_rows"], 50)
        capped = await adapter.execute(adapter.templates["many_rows"], {})
        with adapter._engine.connect() as conn:
            limit = conn.exec_driver_sql("SELECT @@SESSION.sql_select_limit").scalar()
    assert [r["n"] for r in listed.rows] == list(range(1, 51)) and listed.truncated
    assert len(capped.rows) == 5 and capped.truncated and limit == 6

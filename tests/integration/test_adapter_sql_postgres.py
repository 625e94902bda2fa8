"""The sql adapter against the PostgreSQL server on loopback: types, binds, read-only, caps, errors."""

from __future__ import annotations

import json

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
    description: Products of a category with price, stock, SKU and attributes
    parameters:
      - {name: category, type: string, required: true}
    sql: >-
      SELECT p.name, p.price, p.in_stock, p.sku, p.attributes, p.updated_at, w.opened_on
      FROM products p JOIN warehouses w ON w.code = p.warehouse
      WHERE p.category = :category ORDER BY p.price
  - id: product_by_name
    description: One product by name
    parameters:
      - {name: name, type: string, required: true}
    sql: "SELECT id, name FROM products WHERE name = :name"
  - id: cheaper_than
    description: Products under a price, cast in PostgreSQL style
    parameters:
      - {name: max_price, type: number, required: true}
    sql: "SELECT name, price::float8 AS price FROM products WHERE price < :max_price ORDER BY price"
  - id: many_rows
    description: A long series
    sql: "SELECT g AS n FROM generate_series(1, 200000) AS g"
  - id: heavy
    description: A slow aggregate
    sql: "SELECT count(*) AS n FROM generate_series(1, 200000000) AS g"
  - id: broken
    description: A column that does not exist
    sql: "SELECT no_such_column FROM products"
"""


def settings_for(db, **extra):
    return {"name": "inventory", "type": "sql", "connection": {"url": db.url, "connect_timeout": 2}, **extra}


async def test_driver_types_serialise_to_json(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["products_in_category"], {"category": "lighting"})
    assert result.columns == ["name", "price", "in_stock", "sku", "attributes", "updated_at", "opened_on"]
    assert result.rows[0] == {
        "name": "Desk lamp",
        "price": 39.9,
        "in_stock": True,
        "sku": "0b6f5c2e-8d1a-4a57-9d0e-1f0a8c1e0002",
        "attributes": {"watts": 8},
        "updated_at": "2024-05-02T10:00:00+00:00",
        "opened_on": "2015-03-01",
    }
    assert result.rows[1]["price"] == 89.99


async def test_postgres_syntax_and_typed_binds(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["cheaper_than"], {"max_price": 80.0})
    assert result.rows == [{"name": "Desk lamp", "price": 39.9}, {"name": "Monitor arm", "price": 74.25}]


async def test_sessions_are_read_only(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database), LIBRARY) as adapter:
        with adapter._engine.connect() as conn, pytest.raises(Exception, match="read-only transaction"):
            conn.execute(text("DELETE FROM products"))
        result = await adapter.execute(adapter.templates["product_by_name"], {"name": "Bookshelf"})
    assert result.rows == [{"id": 5, "name": "Bookshelf"}]


async def test_row_cap_streams_only_what_it_needs(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database, max_rows=5), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["many_rows"], {})
    assert [r["n"] for r in result.rows] == [1, 2, 3, 4, 5] and result.truncated


async def test_statement_timeout_is_504(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database, query_timeout=0.3), LIBRARY) as adapter:
        with pytest.raises(SourceTimeout) as info:
            await adapter.execute(adapter.templates["heavy"], {})
        assert (await adapter.execute(adapter.templates["product_by_name"], {"name": "Oak desk"})).rows
    assert info.value.status == 504 and info.value.message == "adapter 'inventory': query timed out after 0.3 s"


async def test_bad_query_is_502_without_driver_text(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database), LIBRARY) as adapter:
        with pytest.raises(QueryFailed) as info:
            await adapter.execute(adapter.templates["broken"], {})
    assert info.value.message == "adapter 'inventory': template 'broken' failed to run"


async def test_server_down_is_503(tmp_path):
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/test"
    settings = {"name": "inventory", "type": "sql", "connection": {"url": url, "connect_timeout": 1}}
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.execute(adapter.templates["product_by_name"], {"name": "x"})
        assert (await adapter.health())["status"] == "down"
    assert info.value.message == "adapter 'inventory': cannot connect to the database"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT pg_sleep(10)", r"pg_sleep\(\) is not allowed"),
        ("SELECT pg_read_file('/etc/passwd') AS f", "pg_read_file"),
        ("SELECT name FROM products FOR UPDATE", "locking clauses"),
        ("SELECT nextval('s') AS n", "nextval"),
    ],
)
async def test_dialect_guard_refuses_at_start(tmp_path, pg_database, sql, message):
    library = (
        f"templates:\n  - id: bad\n    description: Something a template must not do\n    sql: {json.dumps(sql)}\n"
    )
    adapter = load_adapter(tmp_path, settings_for(pg_database), library)
    with pytest.raises(ConfigError, match=message) as info:
        await adapter.start()
    assert "library.yaml" in str(info.value)
    await adapter.close()


hostile = st.one_of(
    st.sampled_from(
        [
            "'; DROP TABLE products; --",
            "Oak desk' OR '1'='1",
            "$$; DELETE FROM products; $$",
            "\\'; SELECT 1; --",
            "ä😀",
            "x" * 5000,
            '{"$gt": ""}',
        ]
    ),
    st.text(max_size=100).filter(lambda s: "\x00" not in s),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile)
async def test_hostile_values_are_inert_binds(tmp_path, pg_database, value):
    async with started(tmp_path, settings_for(pg_database), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["product_by_name"], {"name": value})
        count = await adapter.execute(adapter.templates["cheaper_than"], {"max_price": 10**6})
    assert result.rows == []
    assert len(count.rows) == 6


async def test_a_values_list_has_its_own_row_cap(tmp_path, pg_database):
    async with started(tmp_path, settings_for(pg_database, max_rows=5), LIBRARY) as adapter:
        listed = await adapter.list_rows(adapter.templates["many_rows"], 50)
        capped = await adapter.execute(adapter.templates["many_rows"], {})
    assert [r["n"] for r in listed.rows] == list(range(1, 51)) and listed.truncated
    assert len(capped.rows) == 5

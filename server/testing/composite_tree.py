"""Shared pieces of the composite tests: a config tree with real SQLite and DuckDB
children, a probe adapter type of the tests' own, and a composite built the way the runtime builds one.

`probe_sql` is a real SQL adapter registered under a test type name; its `search_delay` and
`fail_with` config keys make its template search slow or fail, so that timeouts, failures and
search order can be observed from outside (every search is recorded in `ProbeSQLAdapter.calls`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any, ClassVar

import duckdb
import numpy as np

from server.adapters.base import DataAdapter
from server.adapters.registry import AdapterRegistry
from server.adapters.sql import SQLAdapter, SQLAdapterSettings
from server.embedding.base import Embedder
from server.params.base import ParameterExtractor
from server.routing.composite import CompositeAdapter, CompositeAdapterSettings, CompositeContext
from server.routing.routable import RoutingSource
from server.runtime.build import Runtime, build_runtime
from server.runtime.loader import load_config
from server.stores.base import StoreHit, TemplateStore
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree

SALES_LIBRARY = """
templates:
  - id: customers_by_region
    description: List the customers in a sales region
    nl_examples: ["Which customers are in the North region?", "show customers from the South",
                  "customer list for a region"]
    parameters:
      - {name: region, type: string, required: true, allowed_values: [North, South, East, West]}
    sql: "SELECT name FROM customers WHERE region = :region ORDER BY name"
  - id: revenue_by_quarter
    description: Total order revenue per quarter
    nl_examples: ["What was revenue in each quarter?", "quarterly revenue", "sales revenue by quarter"]
    sql: "SELECT quarter, SUM(amount) AS revenue FROM orders GROUP BY quarter ORDER BY quarter"
  - id: order_count
    description: Count all orders placed
    nl_examples: ["How many orders do we have?", "total number of orders"]
    sql: "SELECT COUNT(*) AS n FROM orders"
"""

INVENTORY_LIBRARY = """
templates:
  - id: stock_levels
    description: Current stock level of every warehouse item
    nl_examples: ["how much stock is left in the warehouse", "inventory levels per item",
                  "which items are low on stock"]
    sql: "SELECT item, qty FROM stock ORDER BY item"
  - id: warehouse_locations
    description: List the warehouses and the cities they are in
    nl_examples: ["where are our warehouses", "list warehouse locations"]
    sql: "SELECT name, city FROM warehouses ORDER BY name"
"""


def sql_child(name: str, db: str, library: str, type_: str = "sql", **extra: object) -> str:
    lines = [
        f"  - name: {name}",
        f"    type: {type_}",
        f'    connection: {{url: "sqlite:///templates/{db}"}}',
        f'    templates: ["templates/{library}/*.yaml"]',
        "    confidence_threshold: 0.3",
    ]
    lines += [f"    {k}: {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


CHILDREN = "adapters:\n" + "".join(
    [
        sql_child("hr", "people.db", "people"),
        "  - name: sales\n    type: duckdb\n    connection: {path: templates/sales.duckdb}\n"
        '    templates: ["templates/sales/*.yaml"]\n',
        sql_child("hr_twin", "people.db", "people"),  # the same templates as hr: equal scores, for ties
        sql_child("slow", "inventory.db", "inventory", "probe_sql", search_delay=0.4),
        sql_child("broken", "inventory.db", "inventory", "probe_sql", fail_with="ConnectionError"),
        sql_child("probe_a", "inventory.db", "inventory", "probe_sql", search_delay=0.15),
        sql_child("probe_b", "inventory.db", "inventory", "probe_sql", search_delay=0.15),
        sql_child("probe_c", "inventory.db", "inventory", "probe_sql", search_delay=0.15),
    ]
)


class ProbeSettings(SQLAdapterSettings):
    search_delay: float = 0.0
    fail_with: str | None = None


class ProbeSQLAdapter(SQLAdapter):
    """A SQL adapter whose template search (ProbeSource) can be made slow or failing (a test type, not a
    mock). Build the runtime with `make_source=probe_source`."""

    type_name = "probe_sql"
    settings_model = ProbeSettings
    settings: ProbeSettings
    calls: ClassVar[list[tuple[str, float, float]]] = []  # (adapter, started, finished) of every search


class ProbeSource(RoutingSource):
    """The routing source of a probe adapter: its search waits `search_delay`, and fails when `fail_with`
    is set."""

    async def search_templates(self, vector: np.ndarray, k: int) -> list[StoreHit]:
        settings = self.settings
        assert isinstance(settings, ProbeSettings)
        started = time.perf_counter()
        try:
            await asyncio.sleep(settings.search_delay)
            if settings.fail_with:
                # a driver-style message that must not reach clients
                raise ConnectionError("connection refused by 10.0.0.5:5432 secret-dsn")
            return await super().search_templates(vector, k)
        finally:
            ProbeSQLAdapter.calls.append((self.name, started, time.perf_counter()))


def probe_source(
    adapter: DataAdapter, embedder: Embedder, store: TemplateStore, extractor: ParameterExtractor | None
) -> RoutingSource:
    """build_runtime's `make_source` for probe configs: a ProbeSource for probe adapters, else the usual."""
    cls = ProbeSource if isinstance(adapter, ProbeSQLAdapter) else RoutingSource
    return cls(adapter, embedder, store, extractor)


def probe_registry() -> AdapterRegistry:
    """A registry with the probe type added to the built-in ones (found through the entry points)."""
    reg = AdapterRegistry()
    reg.register("probe_sql", ProbeSQLAdapter)
    return reg


def make_sales_duckdb(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (name VARCHAR, region VARCHAR)")
    con.execute("INSERT INTO customers VALUES ('Acme', 'North'), ('Globex', 'South'), ('Initech', 'North')")
    con.execute("CREATE TABLE orders (id INTEGER, quarter VARCHAR, amount DOUBLE)")
    con.execute("INSERT INTO orders VALUES (1, 'Q1', 100), (2, 'Q1', 50), (3, 'Q2', 75)")
    con.close()


def make_inventory_db(path: Path) -> None:
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE stock (item TEXT, qty INTEGER);
        INSERT INTO stock VALUES ('bolts', 500), ('nuts', 20);
        CREATE TABLE warehouses (name TEXT, city TEXT);
        INSERT INTO warehouses VALUES ('W1', 'Leeds');
    """)
    con.commit()
    con.close()


def build_tree(root: Path, config: str = BASE_CONFIG, adapters: str = CHILDREN) -> Path:
    make_people_db(root / "templates" / "people.db")
    make_inventory_db(root / "templates" / "inventory.db")
    make_sales_duckdb(root / "templates" / "sales.duckdb")
    return make_tree(
        root,
        config,
        {"children.yaml": adapters},
        {
            "people/people.yaml": PEOPLE_LIBRARY,
            "sales/sales.yaml": SALES_LIBRARY,
            "inventory/inventory.yaml": INVENTORY_LIBRARY,
        },
    )


async def probe_runtime(root: Path) -> Runtime:
    """A runtime over `build_tree(root)`, its children probe sources (the suite's composite trees)."""
    registry = probe_registry()
    config = load_config(build_tree(root), registry=registry)
    return await build_runtime(config, registry=registry, make_source=probe_source)


def make_composite(runtime: Runtime, children: list[str], **keys: Any) -> CompositeAdapter:
    """A composite exactly as build_runtime makes one from a config entry with these keys."""
    settings = CompositeAdapterSettings.model_validate(
        {"name": "composite", "type": "composite", "child_adapters": children, **keys}
    )
    app = runtime.config.app
    context = CompositeContext(
        root=runtime.config.root,
        lookup=runtime.get,
        retrieval=app.composite_retrieval.merged(settings.overrides()),
        fitted_models=runtime.fitted_models,
        rerankers=app.rerankers,
        shared_rerank_cache=runtime.rerank_cache,
    )
    return CompositeAdapter(settings, context)

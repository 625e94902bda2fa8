"""The shipped example adapters (config/adapters/examples.yaml) and their template libraries run against
the loopback servers seeded with the shipped example data: every example template returns rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from server.adapters.base import AdapterContext
from server.adapters.registry import registry
from server.templates.library import load_library
from tests.support import mariadb, mongo, pg
from tests.support.es_standin import running_es_standin
from tests.support.graphql_api import running_graphql_api
from tests.support.http_api import running_http_api

REPO = Path(__file__).resolve().parents[2]
mongo_server, pg_database, mariadb_database = mongo.mongo_server, pg.pg_database, mariadb.mariadb_database

PARAMS: dict[str, dict[str, dict[str, Any]]] = {
    "inventory_pg": {
        "products_in_category": {"category": "lighting"},
        "products_under_price": {"max_price": 100.0},
        "stock_by_warehouse": {},
    },
    "inventory_mariadb": {
        "products_in_category": {"category": "furniture"},
        "most_expensive_products": {"limit": 3},
        "stock_by_warehouse": {},
    },
    "cars": {
        "cars_by_make": {"make": "Ford"},
        "cars_under_price": {"budget": 20000, "limit": 5},
        "average_price_by_fuel": {},
        "count_cars_of_makes": {"makes": ["Tesla"]},
        "fuel_types": {},
    },
    "support_tickets": {
        "open_tickets_for_product": {"product": "billing"},
        "tickets_mentioning": {"words": "login"},
        "hours_by_product": {},
    },
    "books": {
        "books_by_author": {"author": "George Orwell", "limit": 20},
        "book_by_isbn": {"isbn": "9780451524935"},
        "short_books_in_genre": {"genre": "dystopia", "max_pages": 300},
    },
    "flights": {"flights_from_airport": {"origin": "LHR", "max_price": None}, "airport_name": {"code": "CDG"}},
}


def example_settings() -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((REPO / "config" / "adapters" / "examples.yaml").read_text())
    return {a["name"]: a for a in data["adapters"]}


def test_examples_are_disabled_and_cover_every_server_type():
    settings = example_settings()
    assert all(a["enabled"] is False for a in settings.values())
    assert {a["type"] for a in settings.values()} == {"sql", "mongodb", "elasticsearch", "http", "graphql"}
    assert set(settings) == set(PARAMS)


async def run_example(name: str, connection: dict[str, Any]) -> dict[str, int]:
    raw = example_settings()[name]
    cls = registry.get(raw["type"])
    library = load_library(raw["templates"], REPO, cls.body_key, cls.parse_body, name)
    assert {t.id for t in library.templates} == set(PARAMS[name])
    settings = cls.settings_model.model_validate(
        {**raw, "enabled": True, "connection": {**raw["connection"], **connection}}
    )
    adapter = cls(settings, AdapterContext(root=REPO, templates={t.id: t for t in library.templates}))
    await adapter.start()
    try:
        counts = {}
        for template in library.templates:
            result = await adapter.execute(template, PARAMS[name][template.id])
            counts[template.id] = len(result.rows)
        return counts
    finally:
        await adapter.close()


@pytest.mark.parametrize("name", ["inventory_pg", "inventory_mariadb", "cars", "support_tickets", "books", "flights"])
async def test_every_example_template_returns_rows(name, request):
    if name == "inventory_pg":
        counts = await run_example(name, {"url": request.getfixturevalue("pg_database").url})
    elif name == "inventory_mariadb":
        counts = await run_example(name, {"url": request.getfixturevalue("mariadb_database").url})
    elif name == "cars":
        server = request.getfixturevalue("mongo_server")
        counts = await run_example(name, {"url": server.url, "database": server.database})
    elif name == "support_tickets":
        async with running_es_standin() as es:
            counts = await run_example(name, {"url": es.url, "api_key_env": None})
    elif name == "books":
        async with running_http_api() as api:
            counts = await run_example(name, {"url": api.url, "auth": None})
    else:
        async with running_graphql_api() as api:
            counts = await run_example(name, {"url": api.url})
    assert all(n > 0 for n in counts.values()), counts

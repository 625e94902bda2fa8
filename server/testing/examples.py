"""The shipped example adapters (config/adapters/examples.yaml, disabled by default) built against given
connections, with parameters that make every example template return rows. Used by the examples test and
scripts/bench_adapters.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from server.adapters.base import Adapter, AdapterContext, DataAdapter
from server.adapters.registry import registry
from server.templates.library import load_library
from server.templates.models import Template

REPO = Path(__file__).resolve().parents[2]
EXAMPLES_YAML = REPO / "config" / "adapters" / "examples.yaml"

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
    """The raw settings of every example adapter, by name."""
    data = yaml.safe_load(EXAMPLES_YAML.read_text())
    return {a["name"]: a for a in data["adapters"]}


def example_adapter(name: str, connection: dict[str, Any]) -> tuple[Adapter, list[Template]]:
    """The example adapter `name`, enabled, its connection overridden by `connection`, not started; and its
    templates."""
    raw = example_settings()[name]
    cls = registry.get(raw["type"])
    if not issubclass(cls, DataAdapter):
        raise TypeError(f"adapter type {raw['type']!r} has no templates")
    library = load_library(raw["templates"], REPO, cls.body_key, cls.parse_body, name)
    settings = cls.settings_model.model_validate(
        {**raw, "enabled": True, "connection": {**raw["connection"], **connection}}
    )
    adapter = cls(settings, AdapterContext(root=REPO, templates={t.id: t for t in library.templates}))
    return adapter, library.templates

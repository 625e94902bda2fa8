"""A customer-data composite for fan-out tests and benchmarks: a SQLite CRM (contacts), MongoDB orders, a
support-desk JSON API (aiohttp on loopback, optionally slowed) and an unrelated MongoDB cars child."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from .configs import BASE_CONFIG, make_tree
from .loopback import serving
from .mongo import MongoServer

QUESTION = "Everything we know about customer Acme: contacts, orders and support"

LIBRARIES = {
    "crm/crm.yaml": """
templates:
  - id: company_contacts
    description: CRM contacts (people, emails, phone numbers) at a customer company
    nl_examples: ["who are our contacts at Acme", "contact people at customer Globex", "everything about customer Acme"]
    dedupe_key: email
    parameters:
      - {name: company, type: string, required: true, allowed_values: [Acme, Globex]}
    sql: "SELECT email, name, phone FROM contacts WHERE company = :company ORDER BY email"
""",
    "orders/orders.yaml": """
templates:
  - id: company_orders
    description: Orders placed by a customer company, with totals
    nl_examples: ["what did Acme order", "orders of customer Globex", "everything about customer Acme orders"]
    parameters:
      - {name: company, type: string, required: true, allowed_values: [Acme, Globex]}
    mongodb:
      collection: orders
      filter: {company: {$param: company}}
      projection: {_id: 0, order_id: 1, email: 1, total: 1}
      sort: {order_id: 1}
""",
    "support/support.yaml": """
templates:
  - id: support_contacts
    description: Support desk contacts at a customer company, with their open tickets
    nl_examples: ["support tickets of Acme", "who at customer Globex has open support tickets",
                  "everything about customer Acme support"]
    dedupe_key: email
    parameters:
      - {name: company, type: string, required: true, allowed_values: [Acme, Globex]}
    http:
      path: /contacts
      query: {company: {$param: company}}
      response: {items_path: items, fields: [email, name, open_tickets]}
""",
    "cars/cars.yaml": """
templates:
  - id: used_cars_by_make
    description: Used cars for sale from one car manufacturer, with model and asking price
    nl_examples: ["Show me used Toyota cars for sale", "which Ford cars are in stock"]
    parameters:
      - {name: make, type: string, required: true, allowed_values: [Toyota, Ford]}
    mongodb:
      collection: cars
      filter: {make: {$param: make}}
      projection: {_id: 0, model: 1}
""",
}

SUPPORT = [
    {"company": "Acme", "email": "ADA@acme.example", "name": "Ada L.", "open_tickets": 2},
    {"company": "Acme", "email": "wile@acme.example", "name": "Wile E.", "open_tickets": 5},
    {"company": "Globex", "email": "hank@globex.example", "name": "Hank", "open_tickets": 1},
]


@dataclass
class SupportDesk:
    url: str
    slow_seconds: float = 0.0
    calls: int = 0
    answered: int = 0  # calls it has answered (a slow one answers after slow_seconds)


@asynccontextmanager
async def running_support_desk() -> AsyncIterator[SupportDesk]:
    desk = SupportDesk(url="")

    async def contacts(request: web.Request) -> web.Response:
        desk.calls += 1
        if desk.slow_seconds:
            await asyncio.sleep(desk.slow_seconds)
        company = request.query.get("company")
        desk.answered += 1
        return web.json_response({"items": [c for c in SUPPORT if c["company"] == company]})

    app = web.Application()
    app.router.add_get("/contacts", contacts)
    async with serving(app) as url:
        desk.url = url
        yield desk


def make_crm(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE contacts (email TEXT, name TEXT, phone TEXT, company TEXT);
        INSERT INTO contacts VALUES
          ('ada@acme.example', 'Ada Lovelace', '555-0101', 'Acme'),
          ('bob@acme.example', 'Bob Builder', '555-0102', 'Acme'),
          ('hank@globex.example', 'Hank Scorpio', '555-0200', 'Globex');
    """)
    con.commit()
    con.close()


def seed_orders(url: str, database: str) -> None:
    from pymongo import MongoClient

    with MongoClient[dict[str, Any]](url, serverSelectionTimeoutMS=3000) as client:
        coll = client[database]["orders"]
        coll.delete_many({})
        coll.insert_many(
            [
                {"order_id": "A-1", "company": "Acme", "email": "ada@acme.example", "total": 120.0},
                {"order_id": "A-2", "company": "Acme", "email": "wile@acme.example", "total": 75.5},
                {"order_id": "G-1", "company": "Globex", "email": "hank@globex.example", "total": 10.0},
            ]
        )


def sources_yaml(mongo: MongoServer, support_url: str, composite: str) -> str:
    return f"""
adapters:
  - name: crm
    type: sql
    connection: {{url: "sqlite:///templates/crm.db"}}
    templates: ["templates/crm/*.yaml"]
  - name: orders
    type: mongodb
    connection: {{url: "{mongo.url}", database: {mongo.database}}}
    templates: ["templates/orders/*.yaml"]
  - name: support
    type: http
    connection: {{url: "{support_url}"}}
    templates: ["templates/support/*.yaml"]
    query_timeout: 0.5
  - name: cars
    type: mongodb
    connection: {{url: "{mongo.url}", database: {mongo.database}}}
    templates: ["templates/cars/*.yaml"]
  - name: customer
    type: composite
    child_adapters: [crm, orders, support, cars]
    confidence_threshold: 0.45
{composite}
"""


def customer_tree(root: Path, mongo: MongoServer, support_url: str, composite: str, config: str = BASE_CONFIG) -> Path:
    """Config and template tree under root; `composite` is extra YAML for the `customer` composite."""
    make_crm(root / "templates" / "crm.db")
    seed_orders(mongo.url, mongo.database)
    return make_tree(root, config, {"sources.yaml": sources_yaml(mongo, support_url, composite)}, LIBRARIES)

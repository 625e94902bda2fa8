"""One composite over SQLite, DuckDB, MongoDB, an HTTP JSON API and GraphQL: each question is routed
(with the real embedder) to the right child, which runs the chosen template against its real server."""

from __future__ import annotations

import duckdb

from server.service.answer import answer
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree
from server.testing.graphql_api import running_graphql_api
from server.testing.http_api import running_http_api

LIBRARIES = {
    "people/people.yaml": PEOPLE_LIBRARY,
    "orders/orders.yaml": """
templates:
  - id: revenue_by_region
    description: Total order revenue for each sales region
    nl_examples: ["What is the revenue per region?", "total sales by region", "how much did each region sell"]
    sql: "SELECT region, SUM(amount) AS revenue FROM orders GROUP BY region ORDER BY region"
""",
    "cars/cars.yaml": """
templates:
  - id: used_cars_by_make
    description: Used cars for sale from one car manufacturer, with model and asking price
    nl_examples: ["Show me used Toyota cars for sale", "which Ford cars are in stock", "list second-hand Teslas"]
    parameters:
      - {name: make, type: string, required: true, allowed_values: [Toyota, Ford, Volkswagen, Tesla]}
    mongodb:
      collection: cars
      filter: {make: {$param: make}}
      projection: {_id: 0, model: 1, price: 1}
      sort: {price: 1}
""",
    "books/books.yaml": """
templates:
  - id: books_by_author
    description: Books and novels written by an author, from the library catalogue
    nl_examples: ["Which books did George Orwell write?", "novels by Jane Austen", "list titles by Aldous Huxley"]
    parameters:
      - {name: author, type: string, required: true,
         allowed_values: [Jane Austen, George Orwell, Aldous Huxley, Dan Simmons]}
    http:
      path: /api/books
      query: {author: {$param: author}}
      response: {items_path: data.items, fields: [title, year]}
""",
    "flights/flights.yaml": """
templates:
  - id: flights_from_airport
    description: Airline flights departing from an airport, with destination and fare
    nl_examples: ["Find flights departing from LHR", "what flights leave FRA", "show departures from CDG airport"]
    parameters:
      - {name: origin, type: string, required: true, allowed_values: [LHR, FRA, CDG]}
    graphql:
      query: "query($origin: String!) { flights(origin: $origin) { number destination price } }"
      variables: {origin: {$param: origin}}
      response: {items_path: flights}
""",
}


def adapters_yaml(mongo_url: str, database: str, http_url: str, graphql_url: str) -> str:
    return f"""
adapters:
  - name: people
    type: sql
    connection: {{url: "sqlite:///templates/people.db"}}
    templates: ["templates/people/*.yaml"]
  - name: orders
    type: duckdb
    connection: {{path: templates/orders.duckdb}}
    templates: ["templates/orders/*.yaml"]
  - name: cars
    type: mongodb
    connection: {{url: "{mongo_url}", database: {database}}}
    templates: ["templates/cars/*.yaml"]
  - name: books
    type: http
    connection: {{url: "{http_url}"}}
    templates: ["templates/books/*.yaml"]
  - name: flights
    type: graphql
    connection: {{url: "{graphql_url}"}}
    templates: ["templates/flights/*.yaml"]
  - name: everything
    type: composite
    child_adapters: [people, orders, cars, books, flights]
    confidence_threshold: 0.3
"""


def make_orders_db(path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders (id INTEGER, region VARCHAR, amount DECIMAL(10, 2))")
    con.execute("INSERT INTO orders VALUES (1, 'North', 120.50), (2, 'South', 80.00), (3, 'North', 19.50)")
    con.close()


QUESTIONS = [
    ("Who works in Engineering?", "people", "people_in_department", [{"name": "Ada"}, {"name": "Grace"}]),
    (
        "What is the total revenue per region?",
        "orders",
        "revenue_by_region",
        [{"region": "North", "revenue": 140}, {"region": "South", "revenue": 80}],
    ),
    (
        "Show me the used Toyota cars for sale",
        "cars",
        "used_cars_by_make",
        [{"model": "Corolla", "price": 14500}, {"model": "Prius", "price": 21900}],
    ),
    (
        "Which books did George Orwell write?",
        "books",
        "books_by_author",
        [{"title": "1984", "year": 1949}, {"title": "Animal Farm", "year": 1945}],
    ),
    (
        "Find flights departing from FRA",
        "flights",
        "flights_from_airport",
        [{"number": "LH400", "destination": "JFK", "price": 610.0}],
    ),
]


async def test_one_composite_routes_each_question_to_its_source(tmp_path, mongo_server):
    async with running_http_api() as http_api, running_graphql_api() as graphql_api:
        make_people_db(tmp_path / "templates" / "people.db")
        make_orders_db(tmp_path / "templates" / "orders.duckdb")
        config_dir = make_tree(
            tmp_path,
            BASE_CONFIG,
            {"sources.yaml": adapters_yaml(mongo_server.url, mongo_server.database, http_api.url, graphql_api.url)},
            LIBRARIES,
        )
        async with running_runtime(config_dir) as runtime:
            composite = runtime.get("everything")
            for question, child, template_id, rows in QUESTIONS:
                result = await answer(composite, question)
                routing = result.body["metadata"]["composite_routing"]
                assert (result.status, routing["selected_adapter"], routing["template_id"]) == (
                    "executed",
                    child,
                    template_id,
                ), question
                assert result.body["metadata"]["executed_by"] == child
                assert result.body["rows"] == rows, question
                assert sorted(routing["adapters_searched"]) == ["books", "cars", "flights", "orders", "people"]
    assert http_api.log[-1].query == [("author", "George Orwell")]
    assert graphql_api.received[-1]["variables"] == {"origin": "FRA"}

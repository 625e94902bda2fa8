"""A bound said one way and queried another (server/params/bounds.py): 'cheaper than $49' against
`price BETWEEN :min_price AND :max_price` listed the products at exactly 49, '100000 or more' against
`salary > :min_salary` left out those at exactly 100,000."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from server.params.bounds import compared
from server.params.extractor import TemplateParameterExtractor
from server.params.settings import ParameterExtractionSettings
from server.testing.templates import template

PRICE = [
    {"name": "min_price", "type": "number", "default": 0},
    {"name": "max_price", "type": "number", "default": 1000000},
]
BETWEEN = "SELECT name FROM products WHERE price BETWEEN :min_price AND :max_price"


def extractor() -> TemplateParameterExtractor:
    return TemplateParameterExtractor(ParameterExtractionSettings(), today=lambda: dt.date(2025, 12, 31))


@pytest.mark.parametrize(
    ("sql", "want"),
    [
        (BETWEEN, {"min_price": "gte", "max_price": "lte"}),
        ("SELECT 1 FROM p WHERE price < :max_price AND price >= :min_price", {"max_price": "lt", "min_price": "gte"}),
        ("SELECT 1 FROM p WHERE :max_price > price AND :min_price <= price", {"max_price": "lt", "min_price": "gte"}),
        ("SELECT 1 FROM p WHERE price BETWEEN $min_price AND $max_price", {"min_price": "gte", "max_price": "lte"}),
        ("SELECT 1 FROM p WHERE (:max_price IS NULL OR price <= :max_price)", {"max_price": "lte"}),
        # compared two ways, or not compared: left as said
        ("SELECT 1 FROM p WHERE price < :max_price OR cost <= :max_price", {}),
        ("SELECT :max_price AS m, :min_price AS n", {}),
        # found by a review: '<>' and '=>' read as '>', a cast that would undo the move, NOT BETWEEN, comments
        ("SELECT 1 FROM p WHERE price <> :max_price", {}),
        ("SELECT f(x => :max_price)", {}),
        ("SELECT 1 FROM p WHERE price <= :max_price::DECIMAL(10,2)", {}),
        ("SELECT 1 FROM p WHERE price NOT BETWEEN :min_price AND :max_price", {}),
        (BETWEEN + " -- and cost < :max_price", {"min_price": "gte", "max_price": "lte"}),
        # a '--' inside a string is no comment (a folded YAML body is one line)
        ("SELECT COALESCE(m, '--') AS m FROM p WHERE price > :min_price", {"min_price": "gt"}),
        ("-- the customer's products\nSELECT 1 FROM p WHERE price > :min_price AND s = 'x'", {"min_price": "gt"}),
    ],
)
def test_how_the_sql_compares_each_parameter(sql, want):
    assert compared(template(*PRICE, sql=sql)) == want


@pytest.mark.parametrize(
    ("question", "name", "value"),
    [
        ("products cheaper than $49", "max_price", math.nextafter(49.0, -math.inf)),  # was 49: '<=' kept 49.00
        ("products over $899", "min_price", math.nextafter(899.0, math.inf)),
        ("products that cost at most 49 dollars", "max_price", 49.0),  # said as queried: unchanged
        ("products of at least 549", "min_price", 549.0),
    ],
)
async def test_a_strict_bound_against_an_inclusive_query(question, name, value):
    got = await extractor().extract(question, template(*PRICE, sql=BETWEEN))
    assert got.values[name] == value


async def test_an_inclusive_bound_against_a_strict_query():
    salary = template(
        {"name": "min_salary", "type": "number", "required": True},
        sql="SELECT count(*) FROM employees WHERE salary > :min_salary",
    )
    got = await extractor().extract("how many earn 100000 or more", salary)
    assert got.values["min_salary"] == math.nextafter(100000.0, -math.inf)
    assert (await extractor().extract("how many earn more than 100000", salary)).values["min_salary"] == 100000.0
    seats = template(
        {"name": "min_seats", "type": "integer", "required": True}, sql="SELECT 1 FROM cars WHERE seats > :min_seats"
    )
    assert (await extractor().extract("cars with at least 5 seats", seats)).values["min_seats"] == 4  # an integer: 1


async def test_a_move_past_what_the_parameter_allows_keeps_the_bound_as_said():
    """'earning 0 or more' with `min: 0` was -5e-324 (found by a review)."""
    salary = template(
        {"name": "min_salary", "type": "number", "required": True, "min": 0},
        sql="SELECT count(*) FROM employees WHERE salary > :min_salary",
    )
    assert (await extractor().extract("employees earning 0 or more", salary)).values["min_salary"] == 0

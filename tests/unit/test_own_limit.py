"""Which LIMIT of a SQL body is the template's own, and how an answer asks for one row more than it."""

from __future__ import annotations

import pytest

from server.adapters.own_limit import OwnLimit, limited_query, own_limit


@pytest.mark.parametrize(
    ("sql", "dialect", "found"),
    [
        ("SELECT a FROM t WHERE b = :b ORDER BY a LIMIT :limit", "sqlite", OwnLimit(parameter="limit")),
        ("SELECT a FROM t LIMIT :n OFFSET 20", "sqlite", OwnLimit(parameter="n")),
        ("SELECT a FROM (SELECT a FROM t LIMIT 3) x ORDER BY a LIMIT $limit", "duckdb", OwnLimit(parameter="limit")),
        ("SELECT a::int FROM t LIMIT :limit", "sqlite", OwnLimit(parameter="limit")),
        ("SELECT a FROM t LIMIT 10", "sqlite", OwnLimit(value=10, start=22, end=24)),
        ("SELECT a FROM t -- LIMIT 5\nLIMIT 7", "sqlite", OwnLimit(value=7, start=33, end=34)),
    ],
)
def test_a_plain_top_level_limit_is_found(sql, dialect, found):
    assert own_limit(sql, dialect) == found


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a FROM t",  # no limit
        "SELECT a FROM (SELECT a FROM t LIMIT 3) x",  # only inside a subquery
        "SELECT a FROM t WHERE rank <= :limit LIMIT :limit",  # the bind means something else as well
        "SELECT a FROM t LIMIT :limit + 1",  # an expression
        "SELECT a FROM t LIMIT 5, 10",  # offset, count
        "SELECT 'LIMIT 3' AS a FROM t",  # a string
    ],
)
def test_anything_else_runs_as_written(sql):
    assert own_limit(sql, "sqlite") is None
    query = limited_query(sql, {"limit": 3}, "sqlite", 1000)
    assert (query.sql, query.params, query.cap) == (sql, {"limit": 3}, 1000)


def test_a_bound_limit_is_bound_one_higher_and_the_answer_capped_at_it():
    query = limited_query("SELECT a FROM t LIMIT :limit", {"limit": 100, "b": "x"}, "sqlite", 1000)
    assert (query.sql, query.params, query.cap) == ("SELECT a FROM t LIMIT :limit", {"limit": 101, "b": "x"}, 100)
    smaller_cap = limited_query("SELECT a FROM t LIMIT :limit", {"limit": 100}, "sqlite", 50)
    assert smaller_cap.cap == 50 and smaller_cap.params == {"limit": 101}


def test_a_written_limit_is_raised_in_the_text_and_no_value_of_the_question_is():
    query = limited_query("SELECT a FROM t WHERE b = :b LIMIT 10 OFFSET 5", {"b": "1; DROP"}, "sqlite", 1000)
    assert query.sql == "SELECT a FROM t WHERE b = :b LIMIT 11 OFFSET 5"
    assert query.params == {"b": "1; DROP"} and query.cap == 10


@pytest.mark.parametrize("value", [None, 0, -3, "10", True])
def test_a_bind_without_a_usable_number_is_left_to_the_database(value):
    query = limited_query("SELECT a FROM t LIMIT :limit", {"limit": value}, "sqlite", 1000)
    assert query.params == {"limit": value} and query.cap == 1000

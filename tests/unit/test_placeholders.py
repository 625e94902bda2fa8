"""Typed placeholders: parsing finds whole-value placeholders only; rendering puts literal values in place."""

from __future__ import annotations

import datetime as dt

import pytest

from server.adapters.mongodb import parse_mongo_body, render_mongo, value_context
from server.adapters.placeholders import (
    LiteralValueError,
    Placeholder,
    keys_in,
    literal_value,
    parse_structure,
    placeholders_in,
    render,
)


def test_both_spellings_become_placeholders():
    parsed = parse_structure({"a": {"$param": "x"}, "b": ["{{ y }}", "{{y}}", 3], "c": {"d": "plain"}})
    assert parsed.value == {"a": Placeholder("x"), "b": [Placeholder("y"), Placeholder("y"), 3], "c": {"d": "plain"}}
    assert parsed.placeholders == {"x", "y"}
    assert [p for p, _ in placeholders_in(parsed.value)] == [("a",), ("b", 0), ("b", 1)]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"a": "hello {{x}}"}, "whole value"),
        ({"a": "{{x}}{{y}}"}, "whole value"),
        ({"{{x}}": 1}, "cannot stand for a key"),
        ({"$param": "x", "other": 1}, "exactly"),
        ({"a": {"$param": "not a name"}}, "exactly"),
        ({"a": {"$param": 3}}, "exactly"),
        ({1: "a"}, "keys must be strings"),
        ({"a": object()}, "unsupported value"),
    ],
)
def test_malformed_placeholders_are_refused_with_their_path(raw, message):
    with pytest.raises(ValueError, match=message):
        parse_structure(raw, "body")


def test_render_is_typed_and_fresh():
    raw = {"n": "{{n}}", "f": "{{f}}", "b": "{{b}}", "l": "{{l}}", "s": "{{s}}", "none": "{{m}}"}
    tree = parse_structure(raw).value
    params = {"n": 3, "f": 2.5, "b": False, "l": ["a", 1], "s": '{"$gt": ""}'}
    out = render(tree, params)
    assert out == {"n": 3, "f": 2.5, "b": False, "l": ["a", 1], "s": '{"$gt": ""}', "none": None}
    out["l"].append("mutated")
    assert render(tree, params)["l"] == ["a", 1]


@pytest.mark.parametrize("value", [{"$gt": ""}, [{"a": 1}], float("nan"), float("inf"), object()])
def test_non_literal_values_are_refused(value):
    with pytest.raises(LiteralValueError):
        literal_value("p", value)


def test_dates_render_as_text_unless_the_source_has_dates():
    assert literal_value("d", dt.date(2024, 5, 1)) == "2024-05-01"
    assert literal_value("d", dt.date(2024, 5, 1), dates_as_text=False) == dt.date(2024, 5, 1)


def test_keys_in_walks_every_level():
    assert set(keys_in({"a": [{"$where": 1}], "b": {"c": 2}})) == {"a", "$where", "b", "c"}


@pytest.mark.parametrize(
    ("path", "context"),
    [
        (("filter", "make"), "query"),
        (("filter", "$expr", "$eq", 1), "expression"),
        (("filter", "$and", 0, "price", "$lt"), "query"),
        (("pipeline", 0, "$match", "year", "$gte"), "query"),
        (("pipeline", 0, "$match", "$expr", "$gt", 1), "expression"),
        (("pipeline", 1, "$project", "tag"), "expression"),
        (("pipeline", 1, "$group", "total", "$sum"), "expression"),
        (("pipeline", 2, "$limit"), "bare"),
        (("pipeline", 2, "$lookup", "pipeline", 0, "$match", "x"), "query"),
        (("limit",), "bare"),
    ],
)
def test_mongo_value_context(path, context):
    assert value_context(path) == context


def test_mongo_wraps_expression_values_in_literal_only():
    body = parse_mongo_body(
        {
            "collection": "c",
            "operation": "aggregate",
            "pipeline": [
                {"$match": {"make": {"$param": "v"}, "$expr": {"$eq": ["$model", {"$param": "v"}]}}},
                {"$addFields": {"label": {"$param": "v"}}},
                {"$limit": {"$param": "n"}},
            ],
        }
    ).value
    sent = render_mongo(body, {"v": "$price", "n": 5}, cap=100)
    assert sent["pipeline"] == [
        {"$match": {"make": "$price", "$expr": {"$eq": ["$model", {"$literal": "$price"}]}}},
        {"$addFields": {"label": {"$literal": "$price"}}},
        {"$limit": 5},
        {"$limit": 101},
    ]


def test_mongo_find_limit_is_capped_and_checked():
    body = parse_mongo_body({"collection": "c", "filter": {}, "limit": "{{n}}"}).value
    assert render_mongo(body, {"n": 10_000}, cap=50)["limit"] == 51
    assert render_mongo(body, {}, cap=50)["limit"] == 51
    with pytest.raises(ValueError, match="positive integer"):
        render_mongo(body, {"n": "10"}, cap=50)

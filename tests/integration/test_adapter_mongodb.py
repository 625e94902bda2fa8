"""MongoDB adapter against a real wire-protocol server (SecantusDB) on loopback."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.adapters.mongodb import parse_mongo_body
from server.errors import QueryFailed, SourceTimeout, SourceUnavailable
from server.params.values_from import adapter_values_runner
from server.testing.adapter_harness import started
from server.testing.mongo import CARS
from server.testing.servers import free_port

LIBRARY = """
templates:
  - id: cars_by_make
    description: Cars of one make, cheapest first
    parameters:
      - {name: make, type: string, required: true}
    mongodb:
      collection: cars
      operation: find
      filter: {make: {$param: make}}
      projection: {_id: 0, model: 1, price: 1}
      sort: {price: 1}
  - id: cars_under_price
    description: Cars cheaper than a price
    parameters:
      - {name: max_price, type: integer, required: true}
      - {name: limit, type: integer, default: 10}
    mongodb:
      collection: cars
      filter: {price: {$lt: "{{max_price}}"}}
      projection: {_id: 0, make: 1, model: 1}
      sort: {price: -1}
      limit: {$param: limit}
  - id: average_price_by_fuel
    description: Average price per fuel type for cars newer than a year
    parameters:
      - {name: since, type: integer, required: true}
    mongodb:
      collection: cars
      operation: aggregate
      pipeline:
        - {$match: {year: {$gte: {$param: since}}}}
        - {$group: {_id: "$fuel", avg_price: {$avg: "$price"}, n: {$sum: 1}}}
        - {$sort: {_id: 1}}
  - id: cars_matching_label
    description: Cars whose make equals a label, compared inside an aggregation expression
    parameters:
      - {name: label, type: string, required: true}
    mongodb:
      collection: cars
      operation: aggregate
      pipeline:
        - {$match: {$expr: {$eq: ["$make", {$param: label}]}}}
        - {$project: {_id: 0, model: 1, tag: {$param: label}}}
  - id: count_of_makes
    description: How many cars of these makes
    parameters:
      - {name: makes, type: array, required: true}
    mongodb:
      collection: cars
      operation: count
      filter: {make: {$in: {$param: makes}}}
  - id: fuels
    description: The fuel types on offer
    mongodb: {collection: cars, operation: distinct, key: fuel}
"""


def settings_for(server, **extra):
    return {
        "name": "cars",
        "type": "mongodb",
        "connection": {"url": server.url, "database": server.database, "connect_timeout": 2},
        **extra,
    }


async def test_find_filter_sort_projection(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["cars_by_make"], {"make": "Toyota"})
    assert result.rows == [{"model": "Corolla", "price": 14500}, {"model": "Prius", "price": 21900}]
    assert result.columns == ["model", "price"] and not result.truncated


async def test_find_with_typed_limit_and_operator_in_template(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["cars_under_price"], {"max_price": 20000, "limit": 2})
    assert result.rows == [{"make": "Volkswagen", "model": "Golf"}, {"make": "Toyota", "model": "Corolla"}]


async def test_aggregate_group(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        result = await adapter.execute(adapter.templates["average_price_by_fuel"], {"since": 2021})
    assert result.rows == [
        {"_id": "diesel", "avg_price": 27400, "n": 1},
        {"_id": "electric", "avg_price": 33900, "n": 2},
        {"_id": "hybrid", "avg_price": 21900, "n": 1},
    ]


async def test_count_and_distinct(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        count = await adapter.execute(adapter.templates["count_of_makes"], {"makes": ["Ford", "Tesla"]})
        fuels = await adapter.execute(adapter.templates["fuels"], {})
    assert count.rows == [{"count": 3}]
    assert sorted(r["fuel"] for r in fuels.rows) == ["diesel", "electric", "hybrid", "petrol"]


async def test_expression_values_are_literals_not_field_paths(tmp_path, mongo_server):
    """'$make' as a value would read the field and match every car; as a literal it matches none."""
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        template = adapter.templates["cars_matching_label"]
        assert adapter.render_request(template, {"label": "$make"})["pipeline"][0] == {
            "$match": {"$expr": {"$eq": ["$make", {"$literal": "$make"}]}}
        }
        hostile = await adapter.execute(template, {"label": "$make"})
        honest = await adapter.execute(template, {"label": "Tesla"})
    assert hostile.rows == []
    assert honest.rows == [{"model": "Model 3", "tag": "Tesla"}]


@pytest.mark.parametrize("value", ['{"$gt": ""}', "$where", "Toyota' || '1'=='1", '{"$ne": null}', "$gt"])
async def test_operator_shaped_strings_are_inert(tmp_path, mongo_server, value):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        template = adapter.templates["cars_by_make"]
        assert adapter.render_request(template, {"make": value})["filter"] == {"make": value}
        result = await adapter.execute(template, {"make": value})
    assert result.rows == []


async def test_a_mapping_value_is_refused(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        with pytest.raises(QueryFailed, match="single value"):
            await adapter.execute(adapter.templates["cars_by_make"], {"make": {"$gt": ""}})


async def test_row_cap_truncates(tmp_path, mongo_server):
    async with started(tmp_path, settings_for(mongo_server, max_rows=3), LIBRARY) as adapter:
        found = await adapter.execute(adapter.templates["cars_under_price"], {"max_price": 10**6, "limit": 50})
        grouped = await adapter.execute(adapter.templates["average_price_by_fuel"], {"since": 1990})
    assert len(found.rows) == 3 and found.truncated
    assert len(grouped.rows) == 3 and grouped.truncated


async def test_server_down_is_503_naming_the_adapter(tmp_path):
    settings = {
        "name": "cars",
        "type": "mongodb",
        "connection": {
            "url": f"mongodb://127.0.0.1:{free_port()}/?directConnection=true",
            "database": "x",
            "connect_timeout": 0.3,
        },
    }
    async with started(tmp_path, settings, LIBRARY) as adapter:
        with pytest.raises(SourceUnavailable) as info:
            await adapter.execute(adapter.templates["fuels"], {})
        assert (await adapter.health())["status"] == "down"
    assert info.value.status == 503
    assert info.value.message == "adapter 'cars': cannot reach the MongoDB server"


async def test_slow_server_is_504(tmp_path, mongo_server):
    from pymongo import AsyncMongoClient

    admin = AsyncMongoClient(mongo_server.url)
    await admin.admin.command(
        {
            "configureFailPoint": "failCommand",
            "mode": {"times": 1},
            "data": {"failCommands": ["distinct"], "blockConnection": True, "blockTimeMS": 1500},
        }
    )
    try:
        async with started(tmp_path, settings_for(mongo_server, query_timeout=0.3), LIBRARY) as adapter:
            with pytest.raises(SourceTimeout) as info:
                await adapter.execute(adapter.templates["fuels"], {})
        assert info.value.status == 504 and "'cars'" in info.value.message
    finally:
        await admin.admin.command({"configureFailPoint": "failCommand", "mode": "off"})
        await admin.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"collection": "cars", "filter": {"$where": "this.price > 1"}}, r"\$where"),
        ({"collection": "cars", "operation": "aggregate", "pipeline": [{"$out": "stolen"}]}, r"\$out"),
        ({"collection": "cars", "filter": {"make": "{{make}} and more"}}, "whole value"),
        ({"collection": "{{coll}}"}, "collection cannot contain placeholders"),
        ({"collection": "cars", "filter": {"{{field}}": 1}}, "cannot stand for a key"),
        ({"collection": "cars", "filter": {"make": {"$param": "make", "$gt": 1}}}, "exactly"),
        ({"collection": "cars", "operation": "count", "pipeline": [{"$match": {}}]}, "does not take"),
        ({"collection": "cars", "sort": {"{{by}}": 1}}, "key"),
        ({"collection": "cars", "projection": {"make": {"$param": "p"}}}, "projection cannot contain"),
    ],
)
def test_template_guard(body, message):
    with pytest.raises(ValueError, match=message):
        parse_mongo_body(body)


hostile_text = st.one_of(
    st.sampled_from(
        [
            '{"$gt": ""}',
            "$where",
            "'; return true; //",
            "../../etc",
            "{{make}}",
            "$make",
            "ä😀\u202e",
            "x" * 5000,
            '{"$ne": null}',
            "... on Car { price }",
        ]
    ),
    st.text(max_size=200),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=hostile_text)
async def test_hostile_values_reach_the_server_only_as_literals(tmp_path, mongo_server, value):
    async with started(tmp_path, settings_for(mongo_server), LIBRARY) as adapter:
        by_make = adapter.render_request(adapter.templates["cars_by_make"], {"make": value})
        label = adapter.render_request(adapter.templates["cars_matching_label"], {"label": value})
        assert by_make["filter"] == {"make": value}
        assert label["pipeline"][1] == {"$project": {"_id": 0, "model": 1, "tag": {"$literal": value}}}
        rows = (await adapter.execute(adapter.templates["cars_by_make"], {"make": value})).rows
    assert rows == [
        {"model": c["model"], "price": c["price"]} for c in sorted(CARS, key=lambda c: c["price"]) if c["make"] == value
    ]


async def test_a_values_list_is_not_cut_by_max_rows(tmp_path, mongo_server):
    query = {"collection": "cars", "operation": "aggregate", "pipeline": [{"$group": {"_id": "$make"}}]}
    async with started(tmp_path, settings_for(mongo_server, max_rows=1), LIBRARY) as adapter:
        listed = await adapter_values_runner(adapter)("makes.values", query, 1000)
        cut = await adapter_values_runner(adapter)("makes.values", query, 2)
        sent = adapter.render_request(adapter.templates["average_price_by_fuel"], {"since": 1990}, max_rows=7)
    assert len(listed.rows) > 2 and not listed.truncated
    assert len(cut.rows) == 2 and cut.truncated
    assert sent["pipeline"][-1] == {"$limit": 8}

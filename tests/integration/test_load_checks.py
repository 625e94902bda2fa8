"""values_from queries pass the adapter's own guard at load and fail as a named source at run time;
absolute template globs load, answer and are watched."""

from __future__ import annotations

import pytest

from server.config.errors import ConfigError
from server.errors import QueryFailed
from server.params.value_list import ValueList
from server.params.values_from import adapter_values_runner
from server.runtime.loader import load_config
from server.testing.adapter_harness import started
from server.testing.app import running_app, running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_ADAPTER, PEOPLE_LIBRARY, make_people_db, make_tree, people_tree

LOOKUP = """
templates:
  - id: salary_of_person
    description: The salary of one person, looked up by name
    nl_examples: ["what does Ada earn?", "salary of Grace", "how much is Linus paid"]
    parameters:
      - name: person
        required: true
        values_from: {query: "QUERY", strict: true}
    sql: "SELECT name, salary FROM people WHERE name = :person"
"""


def lookup_tree(root, query: str):
    make_people_db(root / "templates" / "people.db")
    libraries = {"people/people.yaml": PEOPLE_LIBRARY, "people/lookup.yaml": LOOKUP.replace("QUERY", query)}
    return make_tree(root, BASE_CONFIG, {"people.yaml": PEOPLE_ADAPTER}, libraries)


async def test_a_values_from_query_on_a_missing_table_is_502_naming_the_adapter(tmp_path):
    async with running_app(lookup_tree(tmp_path, "SELECT name FROM former_people")) as (client, _):
        resp = await client.post("/v1/query", json={"query": "what does Grace earn?", "adapter": "people"})
        assert resp.status == 502
        body = await resp.json()
        assert body["error"]["code"] == "query_failed"
        assert body["error"]["message"] == "adapter 'people': template 'salary_of_person.person.values' failed to run"
        ok = await client.post("/v1/query", json={"query": "who works in the Sales department?"})
        assert ok.status == 200  # templates without the list still answer


async def test_a_values_from_query_refused_by_the_guard_at_run_time_is_a_failed_query(tmp_path):
    """A runtime built without the loader: the same guard runs when the list is fetched."""
    async with running_runtime(people_tree(tmp_path)) as runtime:
        run = adapter_values_runner(runtime.get("people").adapter)
        with pytest.raises(QueryFailed) as caught:
            await run("people_in_department.department.values", "DELETE FROM people", 100)
        assert caught.value.status == 502
        assert caught.value.message == (
            "adapter 'people': values_from query people_in_department.department.values: "
            "sql must be a read-only query (SELECT/WITH), not DELETE"
        )
        listed = await run("x.values", "SELECT DISTINCT department FROM people ORDER BY department", 100)
        assert ValueList.from_rows(listed.rows, listed.columns).values == ("Engineering", "HR", "Sales")


CARS_ADAPTER = """
adapters:
  - name: cars
    type: mongodb
    connection: {url: "mongodb://127.0.0.1:9/?directConnection=true", database: examples}
    templates: ["templates/cars/*.yaml"]
"""

CARS_LIBRARY = """
templates:
  - id: cars_of_make
    description: Cars of one make
    parameters:
      - name: make
        required: true
        values_from:
          query:
            collection: cars
            operation: aggregate
            pipeline: [{$group: {_id: "$make"}}, {$out: stolen}]
    mongodb: {collection: cars, filter: {make: {$param: make}}}
  - id: cars_of_fuel
    description: Cars of one fuel type
    parameters:
      - name: fuel
        values_from:
          query: {collection: cars, operation: distinct, key: fuel, filter: {make: {$param: fuel}}}
    mongodb: {collection: cars, filter: {fuel: {$param: fuel}}}
"""


def test_mongodb_values_from_queries_pass_the_template_guard_at_load(tmp_path):
    """Nothing connects: the URL points at a port nobody listens on."""
    config_dir = make_tree(tmp_path, BASE_CONFIG, {"cars.yaml": CARS_ADAPTER}, {"cars/cars.yaml": CARS_LIBRARY})
    with pytest.raises(ConfigError) as caught:
        load_config(config_dir)
    got = [(i.file, i.line, i.key, i.message) for i in caught.value.issues]
    assert got == [
        (
            "templates/cars/cars.yaml",
            8,
            "templates[0].parameters[0].values_from.query",
            "mongodb: operators ['$out'] are not allowed in templates",
        ),
        (
            "templates/cars/cars.yaml",
            18,
            "templates[1].parameters[0].values_from.query",
            "a values_from query takes no parameters (found ['fuel'])",
        ),
    ]


async def test_a_mongodb_values_from_query_lists_values_from_the_collection(tmp_path, mongo_server):
    library = """
    templates:
      - id: cars_of_make
        description: Cars of one make
        parameters:
          - name: make
            required: true
            values_from: {query: {collection: cars, operation: distinct, key: make}, strict: true}
        mongodb: {collection: cars, filter: {make: {$param: make}}}
    """
    settings = {
        "name": "cars",
        "type": "mongodb",
        "connection": {"url": mongo_server.url, "database": mongo_server.database},
    }
    async with started(tmp_path, settings, library) as adapter:
        spec = adapter.templates["cars_of_make"].parameters[0]
        assert spec.values_from is not None
        listed = await adapter_values_runner(adapter)("cars_of_make.make.values", spec.values_from.query, 1000)
    values = ValueList.from_rows(listed.rows, listed.columns).values
    assert "Toyota" in values and len(values) == len(set(values)) and not listed.truncated


async def test_an_absolute_glob_outside_the_root_loads_answers_and_is_watched(tmp_path):
    shared = tmp_path / "shared" / "people"
    shared.mkdir(parents=True)
    (shared / "people.yaml").write_text(PEOPLE_LIBRARY)
    root = tmp_path / "project"
    make_people_db(root / "templates" / "people.db")
    adapter = PEOPLE_ADAPTER.replace('"templates/people/*.yaml"', f'"{tmp_path}/shared/*/*.yaml"')
    config_dir = make_tree(root, BASE_CONFIG, {"people.yaml": adapter})
    async with running_app(config_dir) as (client, holder):
        resp = await client.post("/v1/query", json={"query": "who works in the Sales department?"})
        assert resp.status == 200
        assert (await resp.json())["rows"] == [{"name": "Linus"}]
        watched = holder.watch_paths()
        assert tmp_path / "shared" in watched and shared in watched


async def test_documents_without_the_listed_field_are_skipped_not_a_500(tmp_path, mongo_server):
    from pymongo import MongoClient

    with MongoClient(mongo_server.url, serverSelectionTimeoutMS=3000) as client:
        dealers = client[mongo_server.database]["dealers"]
        dealers.delete_many({})
        dealers.insert_many([{"name": "Autohaus"}, {"city": "Lyon"}, {"name": "Garage Nord"}])
    library = """
    templates:
      - id: cars_of_dealer
        description: Cars of one dealer
        parameters:
          - name: dealer
            values_from: {query: {collection: dealers, projection: {_id: 0}}}
        mongodb: {collection: cars, filter: {dealer: {$param: dealer}}}
    """
    settings = {
        "name": "cars",
        "type": "mongodb",
        "connection": {"url": mongo_server.url, "database": mongo_server.database},
    }
    async with started(tmp_path, settings, library) as adapter:
        spec = adapter.templates["cars_of_dealer"].parameters[0]
        assert spec.values_from is not None
        listed = await adapter_values_runner(adapter)("cars_of_dealer.dealer.values", spec.values_from.query, 1000)
    assert ValueList.from_rows(listed.rows, listed.columns).values == ("Autohaus", "Garage Nord")

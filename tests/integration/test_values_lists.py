"""values_from lists on real SQLite and DuckDB sources: never cut by the adapter's max_rows, over their
own max_values a load (and reload) error with file:line, fetched when the runtime is built, and a second
column of codes or aliases that fills the listed name."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import duckdb
import pytest

from server.config.errors import ConfigError
from server.runtime.build import build_runtime
from server.runtime.holder import RuntimeHolder
from server.runtime.loader import load_config
from server.service.answer import answer
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, make_tree

ROWS = 300
SEYCHELLES = 250  # a row past the adapter's max_rows


def countries() -> list[tuple[int, str, str | None]]:
    rows: list[tuple[int, str, str | None]] = [(i, f"Territory {i}", None) for i in range(1, ROWS + 1)]
    rows[SEYCHELLES - 1] = (SEYCHELLES, "Seychelles", "SC")
    return rows


AIRLINES = [
    (1, "Delta Air Lines", "DL"),
    (2, "United Airlines", "UA"),
    (3, "US Airways", "US"),
    (4, "Alaska Airlines", "AS"),
]


def make_sqlite(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE countries (id INTEGER PRIMARY KEY, name TEXT, code TEXT)")
    con.executemany("INSERT INTO countries VALUES (?, ?, ?)", countries())
    con.execute("CREATE TABLE airlines (id INTEGER PRIMARY KEY, name TEXT, code TEXT)")
    con.executemany("INSERT INTO airlines VALUES (?, ?, ?)", AIRLINES)
    con.commit()
    con.close()


def make_duckdb(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE countries (id INTEGER, name VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO countries VALUES (?, ?, ?)", countries())
    con.execute("CREATE TABLE airlines (id INTEGER, name VARCHAR, code VARCHAR)")
    con.executemany("INSERT INTO airlines VALUES (?, ?, ?)", AIRLINES)
    con.close()


ADAPTERS = {
    "sql": """
adapters:
  - name: geo
    type: sql
    connection: {url: "sqlite:///templates/geo.db"}
    templates: ["templates/geo/*.yaml"]
    confidence_threshold: 0.2
    max_rows: 100
""",
    "duckdb": """
adapters:
  - name: geo
    type: duckdb
    connection: {path: templates/geo.duckdb}
    templates: ["templates/geo/*.yaml"]
    confidence_threshold: 0.2
    max_rows: 100
""",
}

LIBRARY = """
templates:
  - id: capital_of_country
    description: The row of one country, looked up by its name or code
    nl_examples: ["what is the capital of [France](country)", "tell me about [SC](country)"]
    parameters:
      - name: country
        required: true
        values_from: {query: "SELECT name, code FROM countries ORDER BY id", strict: true}
    sql: "SELECT id, name FROM countries WHERE name = :country"
  - id: flights_of_airline
    description: Flights run by one airline
    nl_examples: ["which flights does [Delta](airline) run", "what airline is [UA](airline)",
                  "flights operated by [United Airlines](airline)"]
    parameters:
      - name: airline
        required: true
        values_from: {query: "SELECT name, code FROM airlines ORDER BY id", strict: true}
    sql: "SELECT id, name FROM airlines WHERE name = :airline"
"""


def tree(root: Path, kind: str = "sql", max_values: int | None = None) -> Path:
    """The geo adapter over 300 countries and 4 airlines; `max_values` on the countries' list if given."""
    (make_sqlite if kind == "sql" else make_duckdb)(root / "templates" / ("geo.db" if kind == "sql" else "geo.duckdb"))
    library = LIBRARY if max_values is None else with_max_values(LIBRARY, max_values)
    return make_tree(root, BASE_CONFIG, {"geo.yaml": ADAPTERS[kind]}, {"geo/geo.yaml": library})


def with_max_values(library: str, max_values: int) -> str:
    return library.replace('ORDER BY id", strict: true}', f'ORDER BY id", strict: true, max_values: {max_values}}}', 1)


@pytest.mark.parametrize("kind", ["sql", "duckdb"])
async def test_a_list_longer_than_max_rows_fills_a_value_from_row_250(tmp_path, kind):
    async with running_runtime(tree(tmp_path, kind)) as runtime:
        geo = runtime.get("geo")
        template = geo.templates["capital_of_country"]
        got = await geo.extractor.extract("what is the capital of seychelles", template)
        assert got.values == {"country": "Seychelles"}
        done = await answer(geo, "what is the capital of seychelles?")
        assert done.status == "executed" and done.body["rows"] == [{"id": SEYCHELLES, "name": "Seychelles"}]


@pytest.mark.parametrize("kind", ["sql", "duckdb"])
async def test_a_list_over_max_values_is_a_load_error_naming_file_line_and_parameter(tmp_path, kind):
    with pytest.raises(ConfigError) as caught:
        await build_runtime(load_config(tree(tmp_path, kind, max_values=299)))
    (issue,) = caught.value.issues
    assert (issue.file, issue.line) == ("templates/geo/geo.yaml", 2)
    assert issue.key == "templates[id=capital_of_country].parameters[0].values_from"
    assert issue.message == "the query lists more than 299 rows (max_values); raise max_values or narrow the query"
    runtime = await build_runtime(load_config(tree(tmp_path / "exact", kind, max_values=300)))  # 300 rows fit
    await runtime.close()


async def test_a_reload_with_a_list_over_max_values_is_refused_and_the_last_good_config_serves(tmp_path):
    holder = RuntimeHolder(tree(tmp_path), close_grace=0.1)
    await holder.start()
    try:
        library = tmp_path / "templates" / "geo" / "geo.yaml"
        good = library.read_text()
        library.write_text(with_max_values(good, 200))
        status = await holder.reload()
        assert not status.ok and holder.generation == 1
        assert status.errors == [
            {
                "file": "templates/geo/geo.yaml",
                "line": 2,
                "key": "templates[id=capital_of_country].parameters[0].values_from",
                "message": "the query lists more than 200 rows (max_values); raise max_values or narrow the query",
            }
        ]
        geo = holder.current.get("geo")
        done = await answer(geo, "what is the capital of seychelles?")  # the last good config, its list whole
        assert done.status == "executed" and done.body["rows"] == [{"id": SEYCHELLES, "name": "Seychelles"}]
        again = await holder.reload()  # the same files again: refused again, not "unchanged"
        assert not again.ok and again.errors == status.errors
        library.write_text(with_max_values(good, 300))
        fixed = await holder.reload()
        assert fixed.ok and holder.generation == 2
    finally:
        await holder.close()


@pytest.mark.parametrize("kind", ["sql", "duckdb"])
async def test_codes_in_a_second_column_fill_the_name_in_any_case(tmp_path, kind):
    async with running_runtime(tree(tmp_path, kind)) as runtime:
        geo = runtime.get("geo")
        flights, capital = geo.templates["flights_of_airline"], geo.templates["capital_of_country"]
        extract = geo.extractor.extract
        assert (await extract("which flights does DL run", flights)).values == {"airline": "Delta Air Lines"}
        got = await extract("which flights does dl run", flights)
        assert got.values == {"airline": "Delta Air Lines"}
        assert [(t.extractor, t.text) for t in got.trace] == [("values_from_alias", "dl")]
        assert (await extract("tell me about sc", capital)).values == {"country": "Seychelles"}
        done = await answer(geo, "which flights does ua run?")
        assert done.status == "executed" and done.body["rows"] == [{"id": 2, "name": "United Airlines"}]


async def test_a_code_that_is_an_everyday_word_is_a_weak_guess(tmp_path):
    """'US' is also 'us': in capitals it is the code; in lower case only a guess, which fills the required
    airline when nothing else in the question does and loses to any other reading."""
    async with running_runtime(tree(tmp_path)) as runtime:
        geo = runtime.get("geo")
        flights = geo.templates["flights_of_airline"]
        extract = geo.extractor.extract
        geo.extractor.learned = None  # the readers' own scores (the model the examples' marks fit re-weighs them)
        strong = await extract("which flights does US run", flights)
        assert strong.trace[0].score == 0.96 and strong.values == {"airline": "US Airways"}  # the code, as listed
        weak = await extract("what airline is us", flights)
        assert weak.values == {"airline": "US Airways"} and weak.trace[0].score == 0.5
        stronger = await extract("tell us about flights on delta", flights)
        assert stronger.values == {"airline": "Delta Air Lines"}

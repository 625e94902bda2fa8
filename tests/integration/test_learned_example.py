"""The documentation's worked example of annotated examples runs as written: the template is read out of
docs/templates-and-parameters.md, served over HTTP on a real SQLite source, and asked the questions the
page answers."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from server.config.errors import ConfigError
from server.runtime.loader import load_config
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, make_tree

DOC = Path(__file__).resolve().parents[2] / "docs" / "templates-and-parameters.md"
ADAPTER = """
adapters:
  - name: flights
    type: sql
    connection: {url: "sqlite:///templates/flights.db"}
    templates: ["templates/flights.yaml"]
    confidence_threshold: 0.1
    parameter_extraction: {today: 2024-04-01}
"""
CITIES = ["boston", "denver", "chicago", "dallas", "atlanta", "las vegas", "charlotte", "st. louis", "new york city"]


def readme_template() -> str:
    text = DOC.read_text(encoding="utf-8")
    after = text.split("<!-- learned-example", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", after, re.S)
    assert block is not None, "the docs' learned example has no yaml block"
    return block.group(1)


def readme_errors() -> list[list[str]]:
    """The load errors the docs show for broken marks: the text blocks right after the example."""
    after = DOC.read_text(encoding="utf-8").split("<!-- learned-example", 1)[1]
    blocks = re.findall(r"\n```\n(templates/flights\.yaml:.*?)```", after, re.S)
    assert len(blocks) == 2
    return [b.strip().splitlines() for b in blocks]


def flights_db(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE cities (name TEXT)")
        con.executemany("INSERT INTO cities VALUES (?)", [(c,) for c in CITIES])
        con.execute("CREATE TABLE flights (number TEXT, origin TEXT, destination TEXT, day TEXT, departs TEXT)")
        con.executemany(
            "INSERT INTO flights VALUES (?, ?, ?, ?, ?)",
            [
                ("IR1", "charlotte", "denver", "2024-04-03", "16:10"),
                ("IR2", "charlotte", "denver", "2024-04-03", "09:00"),
                ("IR3", "denver", "charlotte", "2024-04-03", "17:00"),
                ("IR4", "boston", "reno", "2024-04-04", "08:00"),
            ],
        )


@pytest.fixture
def tree(tmp_path):
    flights_db(tmp_path / "templates" / "flights.db")
    return make_tree(tmp_path, BASE_CONFIG, {"flights.yaml": ADAPTER}, {"flights.yaml": readme_template()})


async def test_the_readme_example_places_both_cities_and_the_time(tree):
    async with running_app(tree) as (client, _):
        reply = await client.post(
            "/v1/query", json={"query": "flights arriving in denver from charlotte after 3 pm", "adapter": "flights"}
        )
        body = await reply.json()
        assert reply.status == 200, body
        meta = body["metadata"]
        assert meta["parameters"] == {"from_city": "charlotte", "to_city": "denver", "day": None, "earliest": "15:00"}
        assert body["rows"] == [
            {"number": "IR1", "origin": "charlotte", "destination": "denver", "day": "2024-04-03", "departs": "16:10"}
        ]
        steps = {s["name"]: s for s in meta["extraction"]}
        assert steps["from_city"]["extractor"] == "values_from" and steps["from_city"]["learned"] >= 0.5
        assert steps["earliest"]["extractor"] == "time"
        assert {"from_city", "to_city"} <= {d["name"] for d in meta["extraction_left_out"]}

        reno = await (
            await client.post("/v1/query", json={"query": "flights from boston to reno", "adapter": "flights"})
        ).json()
        assert reno["metadata"]["parameters"]["to_city"] == "reno"
        assert {s["name"]: s["extractor"] for s in reno["metadata"]["extraction"]}["to_city"] == "learned"

        explained = await (
            await client.post(
                "/v1/test_routing", json={"query": "flights arriving in denver from charlotte", "adapter": "flights"}
            )
        ).json()
        parameters = explained["routing_decision"]["parameters"]
        assert parameters["values"]["from_city"] == "charlotte" and parameters["left_out"]

        catalogue = await (await client.get("/v1/templates?adapter=flights")).json()
        shown = [e for a in catalogue["adapters"] for t in a["templates"] for e in t["examples"]]
        assert "flights from boston to denver" in shown and not any("](" in e or "[" in e for e in shown)

        health = await (await client.get("/health")).json()
        learned = health["adapters"]["flights"]["parameter_extraction"]["learned"]
        assert learned["source"] in ("fitted", "disk") and set(learned["parameters"]) >= {"from_city", "to_city"}


def _said(tmp_path: Path, library: str) -> list[str]:
    config = make_tree(tmp_path, BASE_CONFIG, {"flights.yaml": ADAPTER}, {"flights.yaml": library})
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    return sorted(f"{i.file}:{i.line}: {i.key}: {i.message}" for i in caught.value.issues)


def test_the_readme_load_errors_are_what_the_loader_says(tmp_path):
    template = readme_template()
    wrong = template.replace('from [boston](from_city)"', 'from [boston](fro_city)"').replace(
        '"flights leaving [charlotte](from_city) [after 5 pm](earliest)"', '"flights on [soon](day)"'
    )
    broken = template.replace(
        '"list flights to [denver](to_city) on [april sixth](day)"', '"flights to [denver(to_city)"'
    )
    assert template not in (wrong, broken)
    marks, markup = readme_errors()
    assert _said(tmp_path / "wrong", wrong) == sorted(marks)
    assert _said(tmp_path / "broken", broken) == sorted(markup)

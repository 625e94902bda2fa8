"""End to end through server.service.answer: clarify instead of guessing, and values_from on a real source."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import event

from server.api.outcome import Outcome
from server.config.errors import ConfigError
from server.runtime.build import build_runtime
from server.runtime.loader import load_config
from server.service.answer import answer
from server.testing.app import running_runtime
from server.testing.configs import BASE_CONFIG, PEOPLE_LIBRARY, make_people_db, make_tree

ADAPTER = """
adapters:
  - name: people
    type: sql
    connection: {url: "sqlite:///templates/people.db"}
    templates: ["templates/people/*.yaml"]
    confidence_threshold: 0.3
    parameter_extraction: {today: 2025-12-31, fuzzy_score_floor: 88}
"""

LOOKUP_LIBRARY = """
templates:
  - id: salary_of_person
    description: The salary of one person, looked up by name
    nl_examples: ["what does Ada earn?", "salary of Grace", "how much is Linus paid"]
    parameters:
      - name: person
        type: string
        required: true
        description: Name of the person
        values_from: {query: "SELECT name FROM people ORDER BY name", strict: true}
    sql: "SELECT name, salary FROM people WHERE name = :person"
"""


def tree(root, adapter: str = ADAPTER):
    make_people_db(root / "templates" / "people.db")
    return make_tree(
        root,
        BASE_CONFIG,
        {"people.yaml": adapter},
        {"people/people.yaml": PEOPLE_LIBRARY, "people/lookup.yaml": LOOKUP_LIBRARY},
    )


@pytest.fixture
async def people(tmp_path):
    runtime = await build_runtime(load_config(tree(tmp_path)))
    adapter = runtime.get("people")
    statements: list[str] = []
    event.listen(adapter.adapter._engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    try:
        yield adapter, statements, tmp_path
    finally:
        await runtime.close()


async def test_missing_required_value_needs_clarification_and_runs_no_query(people):
    adapter, statements, _ = people
    result = await answer(adapter, "which people work in that department?")
    assert result.status == Outcome.NEEDS_CLARIFICATION and statements == []
    body = result.body
    assert body["status"] == Outcome.NEEDS_CLARIFICATION and body["rows"] == []
    meta = body["metadata"]
    assert meta["template_id"] == "people_in_department" and meta["status"] == Outcome.NEEDS_CLARIFICATION
    assert meta["clarification"] == [
        {
            "name": "department",
            "problem": "missing",
            "type": "string",
            "allowed_values": ["Engineering", "Sales", "HR"],
            "message": "department: one of Engineering, Sales, HR",
        }
    ]
    assert "one of Engineering, Sales, HR" in body["content"]

    done = await answer(adapter, "which people work in the Sales department?")  # the counter does count
    assert done.status == "executed" and len(statements) == 1
    assert done.body["rows"] == [{"name": "Linus"}]
    assert done.body["metadata"]["extraction"] == [
        {
            "name": "department",
            "value": "Sales",
            "extractor": "allowed_values",
            "span": [25, 30],
            "text": "Sales",
            "score": 0.97,
        }
    ]


async def test_a_value_outside_the_allowed_ones_is_not_run(people):
    adapter, statements, _ = people
    result = await answer(adapter, "which people work in the Legal department?")
    assert result.status == Outcome.NEEDS_CLARIFICATION and statements == []


async def test_values_from_resolves_against_the_source_once_and_rejects_unknown_names(people):
    adapter, statements, _ = people
    assert adapter.extractor.values.queries_run == 1  # the list was fetched when the runtime was built
    first = await answer(adapter, "what does grace earn?")
    assert first.status == "executed" and first.body["rows"] == [{"name": "Grace", "salary": 130000.0}]
    assert first.body["metadata"]["parameters"] == {"person": "Grace"}
    typo = await answer(adapter, "what does Gracie earn?")  # a misspelling above the fuzzy floor
    assert typo.body["metadata"]["parameters"] == {"person": "Grace"}
    assert typo.body["metadata"]["extraction"][0]["extractor"] == "fuzzy"
    assert typo.body["metadata"]["from_cache"] is True and first.body["metadata"]["from_cache"] is False
    unknown = await answer(adapter, "what does Kenneth earn?")
    assert unknown.status == Outcome.NEEDS_CLARIFICATION
    (problem,) = unknown.body["metadata"]["clarification"]
    assert (problem["problem"], problem["given"], problem["suggestions"]) == ("invalid", "Kenneth", ["Ken"])
    # no list query any more, the template once: the typo asked for the same values, answered from the result cache
    assert statements == ["SELECT name, salary FROM people WHERE name = ?"]
    assert adapter.extractor.values.queries_run == 1


async def test_a_reload_refreshes_stored_values(people):
    adapter, _, root = people
    assert (await answer(adapter, "what does Barbara earn?")).status == Outcome.NEEDS_CLARIFICATION
    con = sqlite3.connect(root / "templates" / "people.db")
    con.execute("INSERT INTO people (name, department, salary) VALUES ('Barbara', 'HR', 80000)")
    con.commit()
    con.close()
    async with running_runtime(root / "config") as fresh:
        reloaded = fresh.get("people")
        result = await answer(reloaded, "what does Barbara earn?")
        assert result.status == "executed" and result.body["rows"] == [{"name": "Barbara", "salary": 80000.0}]


def test_unknown_key_in_parameter_extraction_names_file_and_line(tmp_path):
    bad = ADAPTER.replace("fuzzy_score_floor: 88", "fuzzy_floor: 88")
    with pytest.raises(ConfigError) as caught:
        load_config(tree(tmp_path, bad))
    (issue,) = caught.value.issues
    assert issue.file.endswith("people.yaml") and issue.line == 7 and "fuzzy_floor" in issue.key


async def test_test_routing_still_decides_when_the_values_source_is_down(tmp_path):
    """Down when the runtime is built: not a load error, the list is fetched when a question needs it."""
    from server.service.answer import explain_routing

    config_dir = tree(tmp_path)
    (tmp_path / "templates" / "people.db").unlink()
    async with running_runtime(config_dir) as runtime:
        adapter = runtime.get("people")
        body = (await explain_routing(adapter, "what does Grace earn?")).body
        decision = body["routing_decision"]
        assert decision["selected_template"] == "salary_of_person"
        assert "'people'" in decision["parameters"]["error"]
        assert "sqlite" not in decision["parameters"]["error"].lower()
        make_people_db(tmp_path / "templates" / "people.db")  # back up: the list is fetched on demand
        assert (await answer(adapter, "what does Grace earn?")).status == "executed"
